#include "connectors/postgres/cursor.hpp"

#include <boost/json.hpp>

#include "pipeline/core/json_value.hpp"

namespace tidemark::connectors::postgres {

std::string format_cursor(const CursorValues& values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) text += ',';
    text += pipeline::json_quoted(values[i]);
  }
  text += ']';
  return text;
}

std::optional<CursorValues> parse_cursor(std::string_view text) {
  // Boost.JSON rejects invalid UTF-8, lone surrogates and trailing bytes by itself.
  boost::system::error_code error;
  const boost::json::value parsed = boost::json::parse(text, error);
  if (error || !parsed.is_array()) return std::nullopt;
  CursorValues values;
  for (const auto& element : parsed.get_array()) {
    if (!element.is_string()) return std::nullopt;
    const std::string_view value = element.get_string();
    if (value.find('\0') != std::string_view::npos) return std::nullopt;  // no PostgreSQL text holds a NUL
    values.emplace_back(value);
  }
  return values;
}

}  // namespace tidemark::connectors::postgres
