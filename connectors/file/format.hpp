#pragma once
// The text formats the file source reads.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace tidemark::connectors::file {

enum class Format { kCsv, kJsonl };

// "csv" or "jsonl", as written after --format and in the config.
std::optional<Format> parse_format(std::string_view name);
// The inverse of parse_format: the name stored with a quarantined record.
const std::string& format_name(Format format);
// .csv -> csv; .jsonl and .ndjson -> jsonl; anything else has no format. Case-sensitive, as
// the folder listing that uses it is.
std::optional<Format> format_from_extension(const std::filesystem::path& path);

}  // namespace tidemark::connectors::file
