#include "pipeline/core/quoted_value.hpp"

#include <cstdio>

namespace tidemark::pipeline {

std::string shown_value(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < kMaxQuotedBytes; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte == '"' || byte == '\\') {
      out += '\\';
      out += static_cast<char>(byte);
    } else if (byte >= 0x20 && byte < 0x7F) {
      out += static_cast<char>(byte);
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02X", byte);
      out += escaped;
    }
  }
  if (text.size() > kMaxQuotedBytes) out += "...";
  return out;
}

std::string quoted_value(std::string_view text) { return "\"" + shown_value(text) + "\""; }

std::string wrong_kind(std::string_view expected, const Field& field) {
  const auto written = [&field]() -> std::string {
    switch (field.kind) {
      case FieldKind::kString: return "the string " + quoted_value(field.text);
      case FieldKind::kNumber: return "the number " + shown_value(field.text);
      case FieldKind::kBoolean: return "the boolean " + shown_value(field.text);
      case FieldKind::kJson: return "the object or array " + shown_value(field.text);
      case FieldKind::kOther: return "the JSON value " + shown_value(field.text);
      case FieldKind::kUntyped: break;
    }
    return quoted_value(field.text);
  };
  return "must be " + std::string(expected) + ", not " + written();
}

}  // namespace tidemark::pipeline
