#include "pipeline/store/pg/pg_text.hpp"

#include "pipeline/core/utf8.hpp"

namespace tidemark::pipeline::db {

void append_copy_text(std::string& line, std::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\\': line += "\\\\"; break;
      case '\t': line += "\\t"; break;
      case '\n': line += "\\n"; break;
      case '\r': line += "\\r"; break;
      default: line += c;
    }
  }
}

void append_copy_bytea(std::string& line, std::string_view bytes) {
  line += "\\\\x";  // bytea's hex prefix \x, its backslash escaped for COPY
  append_hex(line, bytes);
}

std::string text_array_literal(const std::vector<std::string>& values) {
  std::string literal = "{";
  for (const auto& value : values) {
    if (literal.size() > 1) literal += ',';
    literal += '"';
    for (char c : value) {
      if (c == '"' || c == '\\') literal += '\\';
      literal += c;
    }
    literal += '"';
  }
  return literal + "}";
}

std::string bigint_array_literal(const std::vector<std::int64_t>& values) {
  std::string literal = "{";
  for (const std::int64_t value : values) {
    if (literal.size() > 1) literal += ',';
    literal += std::to_string(value);
  }
  return literal + "}";
}

}  // namespace tidemark::pipeline::db
