#include "connectors/file/format.hpp"

namespace tidemark::connectors::file {

std::optional<Format> parse_format(std::string_view name) {
  if (name == "csv") return Format::kCsv;
  if (name == "jsonl") return Format::kJsonl;
  return std::nullopt;
}

const std::string& format_name(Format format) {
  static const std::string kCsv = "csv";
  static const std::string kJsonl = "jsonl";
  return format == Format::kCsv ? kCsv : kJsonl;
}

std::optional<Format> format_from_extension(const std::filesystem::path& path) {
  const std::string extension = path.extension().string();
  if (extension == ".csv") return Format::kCsv;
  if (extension == ".jsonl" || extension == ".ndjson") return Format::kJsonl;
  return std::nullopt;
}

}  // namespace tidemark::connectors::file
