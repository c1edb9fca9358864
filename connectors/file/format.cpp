#include "connectors/file/format.hpp"

#include <algorithm>
#include <string>

namespace tidemark::connectors::file {

std::optional<Format> parse_format(std::string_view name) {
  if (name == "csv") return Format::kCsv;
  if (name == "jsonl") return Format::kJsonl;
  return std::nullopt;
}

std::string_view to_string(Format format) { return format == Format::kCsv ? "csv" : "jsonl"; }

std::optional<Format> format_from_extension(const std::filesystem::path& path, ExtensionCase letters) {
  std::string extension = path.extension().string();
  if (letters == ExtensionCase::kIgnore) {
    // ASCII only: the extensions compared against are ASCII, and a locale must not matter.
    std::transform(extension.begin(), extension.end(), extension.begin(),
                   [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
  }
  if (extension == ".csv") return Format::kCsv;
  if (extension == ".jsonl" || extension == ".ndjson") return Format::kJsonl;
  return std::nullopt;
}

}  // namespace tidemark::connectors::file
