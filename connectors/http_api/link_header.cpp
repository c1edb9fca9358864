#include "connectors/http_api/link_header.hpp"

#include <algorithm>

namespace tidemark::connectors::http_api {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// A cursor over the header; every step skips the spaces before what it reads.
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  bool at_end() {
    skip_spaces();
    return at_ >= text_.size();
  }
  bool take(char c) {
    skip_spaces();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  // Up to, not including, `stop`; nullopt when `stop` never comes.
  std::optional<std::string_view> until(char stop) {
    const auto end = text_.find(stop, at_);
    if (end == std::string_view::npos) return std::nullopt;
    const auto part = text_.substr(at_, end - at_);
    at_ = end;
    return part;
  }
  // A token (RFC 9110 tchar) or a quoted-string with its escapes undone.
  std::optional<std::string> word() {
    skip_spaces();
    if (at_ < text_.size() && text_[at_] == '"') {
      std::string out;
      for (++at_; at_ < text_.size(); ++at_) {
        if (text_[at_] == '"') {
          ++at_;
          return out;
        }
        if (text_[at_] == '\\' && at_ + 1 < text_.size()) ++at_;
        out += text_[at_];
      }
      return std::nullopt;  // no closing quote
    }
    const auto start = at_;
    while (at_ < text_.size() && is_token_char(text_[at_])) ++at_;
    if (at_ == start) return std::nullopt;
    return std::string(text_.substr(start, at_ - start));
  }

 private:
  static bool is_token_char(char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  }
  void skip_spaces() {
    while (at_ < text_.size() && is_space(text_[at_])) ++at_;
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

bool lists_relation(std::string_view rel, std::string_view relation) {
  std::size_t at = 0;
  while (at < rel.size()) {
    while (at < rel.size() && is_space(rel[at])) ++at;
    const auto end = std::min(rel.find_first_of(" \t", at), rel.size());
    if (end > at && equal_ignoring_case(rel.substr(at, end - at), relation)) return true;
    at = end;
  }
  return false;
}

}  // namespace

std::optional<std::string> link_target(std::string_view header, std::string_view relation) {
  Reader reader(header);
  while (!reader.at_end()) {
    if (reader.take(',')) continue;  // empty list elements are allowed (RFC 9110 §5.6.1)
    if (!reader.take('<')) return std::nullopt;
    const auto target = reader.until('>');
    if (!target || !reader.take('>')) return std::nullopt;
    bool matches = false;
    bool rel_seen = false;  // only the first rel parameter counts (RFC 8288 §3.3)
    while (reader.take(';')) {
      const auto name = reader.word();
      if (!name) return std::nullopt;
      std::optional<std::string> value;
      if (reader.take('=')) {
        value = reader.word();
        if (!value) return std::nullopt;
      }
      if (equal_ignoring_case(*name, "rel") && !rel_seen) {
        rel_seen = true;
        matches = value && lists_relation(*value, relation);
      }
    }
    if (!reader.at_end() && !reader.take(',')) return std::nullopt;
    if (matches) return std::string(*target);
  }
  return std::nullopt;
}

}  // namespace tidemark::connectors::http_api
