#pragma once
// The text formats the file source reads.
#include <filesystem>
#include <optional>
#include <string_view>

namespace tidemark::connectors::file {

enum class Format { kCsv, kJsonl };

// "csv" or "jsonl", as written after --format and in the config.
std::optional<Format> parse_format(std::string_view name);
// The name parse_format reads: "csv" or "jsonl".
std::string_view to_string(Format format);

// How an extension's letters must match.
enum class ExtensionCase {
  kExact,   // a folder source takes the files named exactly .csv (or .jsonl, .ndjson)
  kIgnore,  // a path the user names (config source.path, --source): in.CSV is CSV
};
// .csv -> csv; .jsonl and .ndjson -> jsonl; anything else has no format.
std::optional<Format> format_from_extension(const std::filesystem::path& path,
                                            ExtensionCase letters = ExtensionCase::kExact);

}  // namespace tidemark::connectors::file
