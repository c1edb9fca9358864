#include "connectors/http_api/page.hpp"

#include <algorithm>

#include <boost/json/basic_parser_impl.hpp>

namespace tidemark::connectors::http_api {

namespace {

using boost::json::error_code;
using boost::json::string_view;

// Accepts every event and keeps nothing: the parser only proves the page is one valid JSON
// text (the numbers it sees are never used).
struct CheckOnly {
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code&) { return true; }
  bool on_object_end(std::size_t, error_code&) { return true; }
  bool on_array_begin(error_code&) { return true; }
  bool on_array_end(std::size_t, error_code&) { return true; }
  bool on_key_part(string_view, std::size_t, error_code&) { return true; }
  bool on_key(string_view, std::size_t, error_code&) { return true; }
  bool on_string_part(string_view, std::size_t, error_code&) { return true; }
  bool on_string(string_view, std::size_t, error_code&) { return true; }
  bool on_number_part(string_view, error_code&) { return true; }
  bool on_int64(std::int64_t, string_view, error_code&) { return true; }
  bool on_uint64(std::uint64_t, string_view, error_code&) { return true; }
  bool on_double(double, string_view, error_code&) { return true; }
  bool on_bool(bool, error_code&) { return true; }
  bool on_null(error_code&) { return true; }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }
};

// "" when `text` is one JSON text (surrounding whitespace allowed), else why not.
std::string check_json(std::string_view text) {
  boost::json::parse_options options;
  options.max_depth = kMaxPageDepth;
  boost::json::basic_parser<CheckOnly> parser(options);
  error_code ec;
  const std::size_t parsed = parser.write_some(false, text.data(), text.size(), ec);
  if (ec == boost::json::error::too_deep) return "nested deeper than " + std::to_string(kMaxPageDepth) + " levels";
  if (ec) return ec.message() + " at byte " + std::to_string(parsed);
  if (parsed != text.size()) return "unexpected bytes after the JSON value at byte " + std::to_string(parsed);
  return "";
}

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Walks a text already proven valid JSON by byte offsets.
class Walker {
 public:
  explicit Walker(std::string_view text) : text_(text) {}

  std::size_t skip_ws(std::size_t at) const {
    while (at < text_.size() && is_ws(text_[at])) ++at;
    return at;
  }
  // Just past the string that starts at `at` (its opening quote).
  std::size_t string_end(std::size_t at) const {
    for (++at; at < text_.size(); ++at) {
      if (text_[at] == '\\') {
        ++at;
      } else if (text_[at] == '"') {
        return at + 1;
      }
    }
    return text_.size();
  }
  // Just past the value that starts at `at`.
  std::size_t value_end(std::size_t at) const {
    const char first = text_[at];
    if (first == '"') return string_end(at);
    if (first == '{' || first == '[') {
      std::size_t depth = 0;
      while (at < text_.size()) {
        const char c = text_[at];
        if (c == '"') {
          at = string_end(at);
          continue;
        }
        if (c == '{' || c == '[') ++depth;
        if ((c == '}' || c == ']') && --depth == 0) return at + 1;
        ++at;
      }
      return text_.size();
    }
    while (at < text_.size() && !is_ws(text_[at]) && text_[at] != ',' && text_[at] != ']' && text_[at] != '}') ++at;
    return at;
  }
  // The value of member `name` of the object starting at `at`; npos when it has none.
  std::size_t member(std::size_t at, std::string_view name) const {
    at = skip_ws(at + 1);
    while (text_[at] != '}') {
      const std::size_t key_end = string_end(at);
      const bool same = decoded_string(at, key_end) == name;
      std::size_t value = skip_ws(skip_ws(key_end) + 1);  // past the ':'
      if (same) return value;
      at = skip_ws(value_end(value));
      if (text_[at] == ',') at = skip_ws(at + 1);
    }
    return std::string_view::npos;
  }
  // The byte offsets of the elements of the array starting at `at`.
  std::vector<std::size_t> elements(std::size_t at) const {
    std::vector<std::size_t> starts;
    at = skip_ws(at + 1);
    while (text_[at] != ']') {
      starts.push_back(at);
      at = skip_ws(value_end(at));
      if (text_[at] == ',') at = skip_ws(at + 1);
    }
    return starts;
  }
  // A string's value: its text between the quotes when it holds no escape, else decoded by
  // Boost.JSON (a string holds no number, so nothing is converted).
  std::string decoded_string(std::size_t begin, std::size_t end) const {
    const std::string_view inner = text_.substr(begin + 1, end - begin - 2);
    if (inner.find('\\') == std::string_view::npos) return std::string(inner);
    std::string out;
    struct Collect : CheckOnly {
      std::string* out;
      bool on_string_part(string_view s, std::size_t, error_code&) {
        out->append(s.data(), s.size());
        return true;
      }
      bool on_string(string_view s, std::size_t, error_code&) {
        out->append(s.data(), s.size());
        return true;
      }
    };
    boost::json::basic_parser<Collect> parser(boost::json::parse_options{});
    parser.handler().out = &out;
    error_code ec;
    parser.write_some(false, text_.data() + begin, end - begin, ec);
    return out;
  }

 private:
  std::string_view text_;
};

std::string kind_at(std::string_view text, std::size_t at) {
  switch (text[at]) {
    case '{': return "an object";
    case '[': return "an array";
    case '"': return "a string";
    case 't': case 'f': return "a boolean";
    case 'n': return "null";
    default: return "a number";
  }
}

}  // namespace

std::optional<JsonPath> parse_json_path(std::string_view text) {
  JsonPath path;
  std::size_t at = 0;
  while (true) {
    const auto dot = std::min(text.find('.', at), text.size());
    if (dot == at) return std::nullopt;
    path.emplace_back(text.substr(at, dot - at));
    if (dot == text.size()) return path;
    at = dot + 1;
  }
}

std::string to_string(const JsonPath& path) {
  std::string text;
  for (const auto& name : path) text += (text.empty() ? "" : ".") + name;
  return text;
}

std::variant<Page, std::string> parse_json_page(std::string_view body, const JsonPath& records,
                                                const std::optional<JsonPath>& next) {
  if (const std::string error = check_json(body); !error.empty()) return "the page is not JSON: " + error;
  const Walker walker(body);
  const std::size_t root = walker.skip_ws(0);
  // The value at `path`, npos when a member on the way is missing; an error when a step is
  // not an object.
  const auto find = [&](const JsonPath& path, std::string& error) {
    std::size_t at = root;
    for (std::size_t i = 0; i < path.size(); ++i) {
      if (body[at] != '{') {
        error = (i == 0 ? std::string("the page") : "'" + to_string(JsonPath(path.begin(), path.begin() + i)) + "'") +
                " is " + kind_at(body, at) + ", not an object with member '" + path[i] + "'";
        return std::string_view::npos;
      }
      at = walker.member(at, path[i]);
      if (at == std::string_view::npos) return at;
    }
    return at;
  };

  Page page;
  std::string error;
  const std::size_t array = find(records, error);
  if (!error.empty()) return error;
  const std::string where = records.empty() ? "the page" : "records '" + to_string(records) + "'";
  if (array == std::string_view::npos) return "the page has no member '" + to_string(records) + "' (records)";
  if (body[array] != '[') return where + " is " + kind_at(body, array) + ", not an array";
  std::uint64_t line = 1;
  std::size_t counted = 0;
  for (const std::size_t start : walker.elements(array)) {
    line += static_cast<std::uint64_t>(std::count(body.begin() + static_cast<std::ptrdiff_t>(counted),
                                                  body.begin() + static_cast<std::ptrdiff_t>(start), '\n'));
    counted = start;
    page.records.push_back({body.substr(start, walker.value_end(start) - start), line, start});
  }
  if (next) {
    const std::size_t value = find(*next, error);
    if (!error.empty()) return "next cursor: " + error;
    if (value != std::string_view::npos && body[value] != 'n') {
      const std::size_t end = walker.value_end(value);
      if (body[value] == '"') {
        std::string cursor = walker.decoded_string(value, end);
        if (!cursor.empty()) page.next_cursor = std::move(cursor);
      } else if (body[value] == '-' || (body[value] >= '0' && body[value] <= '9')) {
        page.next_cursor = std::string(body.substr(value, end - value));
      } else {
        return "next cursor '" + to_string(*next) + "' is " + kind_at(body, value) + ", not a string or a number";
      }
    }
  }
  return page;
}

std::variant<Page, std::string> parse_ndjson_page(std::string_view body) {
  Page page;
  std::uint64_t line = 1;
  std::size_t at = 0;
  while (at < body.size()) {
    const std::size_t end = std::min(body.find('\n', at), body.size());
    std::string_view text = body.substr(at, end - at);
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (!std::all_of(text.begin(), text.end(), is_ws)) page.records.push_back({text, line, at});
    ++line;
    at = end + 1;
  }
  return page;
}

}  // namespace tidemark::connectors::http_api
