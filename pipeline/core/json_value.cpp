#include "pipeline/core/json_value.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "pipeline/core/utf8.hpp"

namespace tidemark::pipeline {

namespace {

// numeric's limits (PostgreSQL src/backend/utils/adt/numeric.c): at most 16383 digits after
// the point (NUMERIC_DSCALE_MAX), a weight of at most 32767 base-10000 digits before it
// (131072 decimal digits), and an exponent below INT_MAX / 2 in magnitude.
constexpr std::int64_t kMaxNumericScale = 16383;
constexpr std::int64_t kMaxNumericIntegerDigits = 131072;
constexpr std::int64_t kMaxNumericExponent = 1073741823;  // INT_MAX / 2: that and more overflows

bool is_digit(char c) { return c >= '0' && c <= '9'; }

Rejection error_at(std::string_view rule, std::size_t at) {
  return Rejection{std::string(rule) + " at byte " + std::to_string(at)};
}

// The canonical text of a number token that already matched JSON's grammar.
std::variant<std::string, Rejection> number_text(std::string_view token) {
  std::size_t pos = 0;
  const bool negative = token[pos] == '-';
  if (negative) ++pos;
  std::string digits;  // integer then fraction digits, the point after `integer_digits` of them
  while (pos < token.size() && is_digit(token[pos])) digits += token[pos++];
  const auto integer_digits = static_cast<std::int64_t>(digits.size());
  if (pos < token.size() && token[pos] == '.') {
    ++pos;
    while (pos < token.size() && is_digit(token[pos])) digits += token[pos++];
  }
  const auto fraction_digits = static_cast<std::int64_t>(digits.size()) - integer_digits;
  std::int64_t exponent = 0;
  if (pos < token.size() && (token[pos] == 'e' || token[pos] == 'E')) {
    ++pos;
    const bool exponent_negative = token[pos] == '-';
    if (token[pos] == '-' || token[pos] == '+') ++pos;
    for (; pos < token.size(); ++pos) {
      // Saturates: anything at the limit overflows numeric however many digits follow.
      if (exponent < kMaxNumericExponent) exponent = exponent * 10 + (token[pos] - '0');
    }
    if (exponent >= kMaxNumericExponent) return Rejection{"a number that numeric cannot hold"};
    if (exponent_negative) exponent = -exponent;
  }
  // numeric keeps the digits written after the point, less the exponent: 1.0e-2 -> 0.010.
  const std::int64_t scale = std::max<std::int64_t>(0, fraction_digits - exponent);
  if (scale > kMaxNumericScale) return Rejection{"more than 16383 digits after the point"};
  const std::int64_t point = integer_digits + exponent;  // the point's place in `digits`
  const auto first_nonzero = static_cast<std::int64_t>(std::min(digits.find_first_not_of('0'), digits.size()));
  const bool zero = first_nonzero == static_cast<std::int64_t>(digits.size());
  const std::int64_t whole_digits = zero ? 0 : std::max<std::int64_t>(0, point - first_nonzero);
  if (whole_digits > kMaxNumericIntegerDigits) return Rejection{"more than 131072 digits before the point"};

  const auto digit_at = [&](std::int64_t at) {
    return at >= 0 && at < static_cast<std::int64_t>(digits.size()) ? digits[static_cast<std::size_t>(at)] : '0';
  };
  std::string out;
  if (negative && !zero) out += '-';  // numeric has no negative zero
  if (whole_digits == 0) {
    out += '0';
  } else {
    for (std::int64_t at = point - whole_digits; at < point; ++at) out += digit_at(at);
  }
  if (scale > 0) {
    out += '.';
    for (std::int64_t at = point; at < point + scale; ++at) out += digit_at(at);
  }
  return out;
}

// Recursive descent over one JSON text, writing the canonical form as it goes.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  std::variant<std::string, Rejection> run() {
    std::string out;
    skip_whitespace();
    if (!value(out, 0)) return std::move(*error_);
    skip_whitespace();
    if (pos_ != text_.size()) return error_at("text after the JSON value", pos_);
    return out;
  }

 private:
  bool fail(Rejection rejection) {
    error_ = std::move(rejection);
    return false;
  }
  bool fail(std::string_view rule) { return fail(error_at(rule, pos_)); }

  void skip_whitespace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool value(std::string& out, std::size_t depth) {
    if (pos_ == text_.size()) return fail("end of text where a value should be");
    switch (text_[pos_]) {
      case '{': return object(out, depth + 1);
      case '[': return array(out, depth + 1);
      case '"': {
        std::string decoded;
        if (!string(decoded)) return false;
        out += json_quoted(decoded);
        return true;
      }
      case 't': return literal(out, "true");
      case 'f': return literal(out, "false");
      case 'n': return literal(out, "null");
      default: return number(out);
    }
  }

  bool literal(std::string& out, std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return fail("not a JSON value");
    pos_ += word.size();
    out += word;
    return true;
  }

  bool number(std::string& out) {
    const std::size_t start = pos_;
    const auto digits = [&] {
      const std::size_t from = pos_;
      while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
      return pos_ - from;
    };
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '0') {
      ++pos_;  // a leading zero stands alone: "01" is not JSON
    } else if (digits() == 0) {
      return fail("not a JSON value");
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      if (digits() == 0) return fail("no digit after the point");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (digits() == 0) return fail("no digit in the exponent");
    }
    auto canonical = number_text(text_.substr(start, pos_ - start));
    if (auto* rejection = std::get_if<Rejection>(&canonical)) return fail(error_at(rejection->detail, start));
    out += std::get<std::string>(canonical);
    return true;
  }

  std::optional<char32_t> hex4() {
    if (pos_ + 4 > text_.size()) return std::nullopt;
    char32_t value = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      const char c = text_[pos_ + i];
      value <<= 4;
      if (is_digit(c)) {
        value |= static_cast<char32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        value |= static_cast<char32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        value |= static_cast<char32_t>(c - 'A' + 10);
      } else {
        return std::nullopt;
      }
    }
    pos_ += 4;
    return value;
  }

  // A \u escape after its backslash and 'u', with the low half of a surrogate pair.
  bool unicode_escape(std::string& decoded) {
    const auto high = hex4();
    if (!high) return fail("\\u not followed by 4 hex digits");
    char32_t c = *high;
    if (c == 0) return fail("\\u0000 (jsonb cannot hold NUL)");
    if (c >= 0xDC00 && c <= 0xDFFF) return fail("a low surrogate without a high one");
    if (c >= 0xD800 && c <= 0xDBFF) {
      if (text_.substr(pos_, 2) != "\\u") return fail("a high surrogate without a low one");
      pos_ += 2;
      const auto low = hex4();
      if (!low || *low < 0xDC00 || *low > 0xDFFF) return fail("a high surrogate without a low one");
      c = 0x10000 + ((c - 0xD800) << 10) + (*low - 0xDC00);
    }
    append_utf8(decoded, c);
    return true;
  }

  // A string's value, decoded, after checking every rule jsonb checks.
  bool string(std::string& decoded) {
    ++pos_;  // the opening quote
    while (true) {
      if (pos_ == text_.size()) return fail("unterminated string");
      const auto byte = static_cast<unsigned char>(text_[pos_]);
      if (byte == '"') {
        ++pos_;
        return true;
      }
      if (byte < 0x20) return fail("control character in a string (must be escaped)");
      if (byte == '\\') {
        if (++pos_ == text_.size()) return fail("unterminated string");
        const char escape = text_[pos_++];
        switch (escape) {
          case '"': decoded += '"'; break;
          case '\\': decoded += '\\'; break;
          case '/': decoded += '/'; break;
          case 'b': decoded += '\b'; break;
          case 'f': decoded += '\f'; break;
          case 'n': decoded += '\n'; break;
          case 'r': decoded += '\r'; break;
          case 't': decoded += '\t'; break;
          case 'u':
            if (!unicode_escape(decoded)) return false;
            break;
          default: --pos_; return fail("invalid escape");
        }
        continue;
      }
      const Utf8Sequence sequence = decode_utf8(text_.substr(pos_));
      if (sequence.length == 0) return fail("invalid UTF-8");
      decoded.append(text_.substr(pos_, sequence.length));
      pos_ += sequence.length;
    }
  }

  bool enter(std::size_t depth) {
    if (depth > kMaxJsonDepth) return fail("nested deeper than " + std::to_string(kMaxJsonDepth));
    ++pos_;  // the opening bracket
    skip_whitespace();
    return true;
  }

  bool array(std::string& out, std::size_t depth) {
    if (!enter(depth)) return false;
    out += '[';
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      out += ']';
      return true;
    }
    while (true) {
      if (!value(out, depth)) return false;
      skip_whitespace();
      if (pos_ == text_.size()) return fail("unterminated array");
      if (text_[pos_] == ']') {
        ++pos_;
        out += ']';
        return true;
      }
      if (text_[pos_] != ',') return fail("expected ',' or ']'");
      ++pos_;
      skip_whitespace();
      out += ", ";
    }
  }

  bool object(std::string& out, std::size_t depth) {
    if (!enter(depth)) return false;
    std::vector<std::pair<std::string, std::string>> members;  // decoded key, canonical value
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
    } else {
      while (true) {
        if (pos_ == text_.size() || text_[pos_] != '"') return fail("expected a string key");
        std::string key;
        if (!string(key)) return false;
        skip_whitespace();
        if (pos_ == text_.size() || text_[pos_] != ':') return fail("expected ':'");
        ++pos_;
        skip_whitespace();
        std::string member_value;
        if (!value(member_value, depth)) return false;
        members.emplace_back(std::move(key), std::move(member_value));
        skip_whitespace();
        if (pos_ == text_.size()) return fail("unterminated object");
        if (text_[pos_] == '}') {
          ++pos_;
          break;
        }
        if (text_[pos_] != ',') return fail("expected ',' or '}'");
        ++pos_;
        skip_whitespace();
      }
    }
    // jsonb's order: shorter keys first, then bytewise; stable, so that of equal keys the
    // last one written is the last of its run, and that one is kept.
    std::stable_sort(members.begin(), members.end(), [](const auto& a, const auto& b) {
      if (a.first.size() != b.first.size()) return a.first.size() < b.first.size();
      return a.first < b.first;  // std::string compares bytes as unsigned char
    });
    out += '{';
    bool first = true;
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (i + 1 < members.size() && members[i + 1].first == members[i].first) continue;
      if (!first) out += ", ";
      first = false;
      out += json_quoted(members[i].first);
      out += ": ";
      out += members[i].second;
    }
    out += '}';
    return true;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::optional<Rejection> error_;
};

}  // namespace

std::variant<std::string, Rejection> canonical_json(std::string_view text) { return Parser(text).run(); }

std::variant<std::string, Rejection> canonical_json_number(std::string_view text) {
  auto canonical = canonical_json(text);
  if (const auto* value = std::get_if<std::string>(&canonical)) {
    // Only a number may come back starting with '-' or a digit.
    if (value->empty() || !(value->front() == '-' || is_digit(value->front()))) {
      return Rejection{"not a JSON number"};
    }
  }
  return canonical;
}

void append_json_string(std::string& out, std::string_view text, JsonDelete del) {
  out += '"';
  while (!text.empty()) {
    const auto byte = static_cast<unsigned char>(text.front());
    std::size_t length = 1;
    switch (byte) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (byte < 0x20 || (byte == 0x7f && del == JsonDelete::kEscaped)) {
          out += "\\u00";
          append_hex(out, text.substr(0, 1));
        } else if (byte < 0x80) {
          out += text.front();
        } else if (const std::size_t sequence = decode_utf8(text).length; sequence != 0) {
          length = sequence;
          out.append(text.substr(0, length));
        } else {
          out += "\\ufffd";
        }
    }
    text.remove_prefix(length);
  }
  out += '"';
}

std::string json_quoted(std::string_view utf8) {
  std::string out;
  out.reserve(utf8.size() + 2);
  append_json_string(out, utf8);
  return out;
}

}  // namespace tidemark::pipeline
