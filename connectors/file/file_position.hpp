#pragma once
// The file source's positions: a file (by its name inside the source's folder, a single file
// by its own name) and the byte offset where reading continues in it.
#include <compare>
#include <cstdint>
#include <optional>
#include <string>

#include "pipeline/core/source.hpp"

namespace tidemark::connectors::file {

// Ordered as the source reads: files by the bytes of their names (lexical order), then by
// offset, so a checkpoint only moves forward through a folder.
struct FilePosition {
  std::string file;
  std::uint64_t offset = 0;

  // "file:offset", the file name escaped into valid text (pipeline::escape_bytes).
  pipeline::Position to_position() const;
  // The inverse of to_position; the empty text (the start of any source) is {"", 0}.
  static std::optional<FilePosition> parse(const pipeline::Position& position);
  friend auto operator<=>(const FilePosition&, const FilePosition&) = default;
};

}  // namespace tidemark::connectors::file
