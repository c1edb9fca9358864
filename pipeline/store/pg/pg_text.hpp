#pragma once
// PostgreSQL's text formats, escaped in one place: COPY text lines and array literals sent
// as one text parameter ($1::text[]). Pure; no third-party includes.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tidemark::pipeline::db {

// Appends `value` to a text-format COPY line, escaped (backslash, tab, newline, CR).
void append_copy_text(std::string& line, std::string_view value);
// Appends `bytes` to a text-format COPY line as a bytea value (hex format, "\\x0a1b").
void append_copy_bytea(std::string& line, std::string_view bytes);

// A text[] literal, '{"a","b"}': every element quoted, with '"' and '\' escaped, so any
// text comes back as it was ('{}' for none).
std::string text_array_literal(const std::vector<std::string>& values);
// A bigint[] literal, '{1,2}' ('{}' for none).
std::string bigint_array_literal(const std::vector<std::int64_t>& values);

}  // namespace tidemark::pipeline::db
