#include "connectors/postgres/cursor.hpp"

#include "pipeline/core/json_value.hpp"
#include "pipeline/core/utf8.hpp"

namespace tidemark::connectors::postgres {

namespace {

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) {
      ++at_;
    }
  }
  bool take(char c) {
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  bool done() const { return at_ == text_.size(); }

  // A JSON string at the current byte, unescaped; nullopt when malformed or when it holds a NUL.
  std::optional<std::string> string() {
    if (!take('"')) return std::nullopt;
    std::string out;
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == '"') {
        ++at_;
        return out;
      }
      if (c == '\\') {
        ++at_;
        if (at_ >= text_.size()) return std::nullopt;
        const char escape = text_[at_++];
        switch (escape) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            auto unit = hex4();
            if (!unit || *unit == 0) return std::nullopt;
            char32_t code_point = *unit;
            if (code_point >= 0xDC00 && code_point <= 0xDFFF) return std::nullopt;  // a lone low surrogate
            if (code_point >= 0xD800 && code_point <= 0xDBFF) {
              if (!take('\\') || !take('u')) return std::nullopt;
              const auto low = hex4();
              if (!low || *low < 0xDC00 || *low > 0xDFFF) return std::nullopt;
              code_point = 0x10000 + ((code_point - 0xD800) << 10) + (*low - 0xDC00);
            }
            pipeline::append_utf8(out, code_point);
            break;
          }
          default: return std::nullopt;
        }
        continue;
      }
      if (static_cast<unsigned char>(c) < 0x20) return std::nullopt;  // controls must be escaped
      const std::size_t length = pipeline::storable_utf8_length(text_.substr(at_));
      if (length == 0) return std::nullopt;
      out.append(text_.substr(at_, length));
      at_ += length;
    }
    return std::nullopt;
  }

 private:
  std::optional<char32_t> hex4() {
    if (text_.size() - at_ < 4) return std::nullopt;
    char32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[at_++];
      value <<= 4;
      if (c >= '0' && c <= '9') {
        value |= static_cast<char32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        value |= static_cast<char32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        value |= static_cast<char32_t>(c - 'A' + 10);
      } else {
        return std::nullopt;
      }
    }
    return value;
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace

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
  Reader reader(text);
  CursorValues values;
  reader.skip_space();
  if (!reader.take('[')) return std::nullopt;
  reader.skip_space();
  if (!reader.take(']')) {
    for (;;) {
      reader.skip_space();
      auto value = reader.string();
      if (!value) return std::nullopt;
      values.push_back(std::move(*value));
      reader.skip_space();
      if (reader.take(']')) break;
      if (!reader.take(',')) return std::nullopt;
    }
  }
  reader.skip_space();
  if (!reader.done()) return std::nullopt;
  return values;
}

}  // namespace tidemark::connectors::postgres
