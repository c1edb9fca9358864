#include "connectors/file/file_position.hpp"

#include <charconv>
#include <string_view>

#include "pipeline/core/utf8.hpp"

namespace tidemark::connectors::file {

pipeline::Position FilePosition::to_position() const {
  return pipeline::Position{pipeline::escape_bytes(file) + ":" + std::to_string(offset)};
}

std::optional<FilePosition> FilePosition::parse(const pipeline::Position& position) {
  const std::string_view text = position.text;
  if (text.empty()) return FilePosition{};
  // The offset follows the last ':' so that file names may themselves contain ':'.
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  FilePosition parsed{pipeline::unescape_bytes(text.substr(0, colon)), 0};
  const std::string_view digits = text.substr(colon + 1);
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), parsed.offset);
  if (error != std::errc{} || end != digits.data() + digits.size() || digits.empty()) return std::nullopt;
  return parsed;
}

}  // namespace tidemark::connectors::file
