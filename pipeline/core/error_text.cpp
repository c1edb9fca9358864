#include "pipeline/core/error_text.hpp"

#include <algorithm>
#include <cctype>

#include "pipeline/core/utf8.hpp"

namespace tidemark::pipeline {

std::string bounded_error_text(std::string_view text, std::size_t max_bytes) {
  bool changed = false;
  std::string stored = storable_text(text, changed);
  if (stored.size() <= max_bytes) return stored;
  static constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // U+2026
  // Valid UTF-8 now, so the cut can back up to a character's start.
  stored.resize(utf8_prefix_length(stored, max_bytes > kEllipsis.size() ? max_bytes - kEllipsis.size() : 0));
  return stored + std::string(kEllipsis);
}

namespace {

bool is_scheme_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '-' || c == '.';
}

// One URL: "***" for its userinfo and its query.
std::string redact_url(std::string_view url, std::size_t authority_start) {
  std::string redacted(url.substr(0, authority_start));
  std::string_view rest = url.substr(authority_start);
  const std::size_t authority_end = std::min(rest.find_first_of("/?#"), rest.size());
  if (const std::size_t at = rest.substr(0, authority_end).rfind('@'); at != std::string_view::npos) {
    redacted += "***";
    rest.remove_prefix(at);
  }
  if (const std::size_t query = rest.find('?'); query != std::string_view::npos) {
    const std::size_t fragment = std::min(rest.find('#', query), rest.size());
    redacted.append(rest.substr(0, query + 1)).append("***").append(rest.substr(fragment));
  } else {
    redacted += rest;
  }
  return redacted;
}

}  // namespace

std::string redact_urls(std::string_view text) {
  std::string redacted;
  std::size_t done = 0;  // text[0, done) is in `redacted`
  for (std::size_t mark = text.find("://"); mark != std::string_view::npos; mark = text.find("://", mark + 3)) {
    std::size_t start = mark;
    while (start > done && is_scheme_char(text[start - 1])) --start;
    if (start == mark) continue;
    std::size_t end = mark + 3;
    while (end < text.size() && std::isspace(static_cast<unsigned char>(text[end])) == 0 &&
           std::string_view("\"'<>").find(text[end]) == std::string_view::npos) {
      ++end;
    }
    // Punctuation that ends a sentence or a clause is not part of the URL ("… to http://h/p: refused").
    while (end > mark + 3 && std::string_view(".,:;)]").find(text[end - 1]) != std::string_view::npos) --end;
    redacted.append(text.substr(done, start - done));
    redacted += redact_url(text.substr(start, end - start), mark + 3 - start);
    done = end;
    mark = end > mark + 3 ? end - 3 : mark;
  }
  redacted.append(text.substr(done));
  return redacted;
}

}  // namespace tidemark::pipeline
