#pragma once
// What a `kind: file` source is configured with (docs/sources.md "file"), checked by the
// config parser. Plain values: app/config includes this without the decoders.
#include <chrono>
#include <string>

#include "connectors/file/change_policy.hpp"
#include "connectors/file/format.hpp"

namespace tidemark::connectors::file {

// How long a file's last line without a newline must have been left alone (size and mtime
// unchanged) before it is read as a record: until then it may be half written.
inline constexpr std::chrono::milliseconds kDefaultSettle = std::chrono::seconds(2);

struct FileSourceOptions {
  std::string path;              // a file or a folder, relative to the working directory
  Format format = Format::kCsv;  // from `format:` or the path's extension
  std::chrono::milliseconds settle = kDefaultSettle;  // 0: a last line is read at once
  // What a run does with a file whose content up to where an earlier run read it changed.
  ChangePolicy on_change = ChangePolicy::kReread;
};

}  // namespace tidemark::connectors::file
