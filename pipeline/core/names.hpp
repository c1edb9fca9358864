#pragma once
// The one rule for the names Tidemark builds identifiers from (pipeline and destination names,
// a NATS source's stream, a subject token, a header name): letters, digits, '_' and '-',
// nothing that a URL path, a subject or a metric label would read as a separator.
#include <algorithm>
#include <cstddef>
#include <string_view>

namespace tidemark::pipeline {

constexpr bool is_name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// One name character or more, at most `max_length`.
constexpr bool is_name(std::string_view text, std::size_t max_length = std::string_view::npos) {
  return !text.empty() && text.size() <= max_length && std::all_of(text.begin(), text.end(), is_name_char);
}

}  // namespace tidemark::pipeline
