#pragma once
// The field types an entity declares (docs/entities.md): what the
// config names, what the declaration records and what the field validators check. The one
// place each type is spelt.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace tidemark::pipeline {

enum class FieldType : unsigned char { kText, kInteger, kDecimal, kTimestamp, kDate, kBoolean, kJson };

// Each type with its name in the config and in tidemark_entities.definition.
inline constexpr std::array<std::pair<std::string_view, FieldType>, 7> kFieldTypes = {{
    {"text", FieldType::kText},
    {"integer", FieldType::kInteger},
    {"decimal", FieldType::kDecimal},
    {"timestamp", FieldType::kTimestamp},
    {"date", FieldType::kDate},
    {"boolean", FieldType::kBoolean},
    {"json", FieldType::kJson},
}};

inline constexpr std::string_view to_string(FieldType type) {
  for (const auto& [name, listed] : kFieldTypes) {
    if (listed == type) return name;
  }
  return "unknown";  // only a value cast from outside the enumerators
}

inline constexpr std::optional<FieldType> field_type_from_string(std::string_view name) {
  for (const auto& [listed, type] : kFieldTypes) {
    if (listed == name) return type;
  }
  return std::nullopt;
}

// A text field's max_length when the declaration names none, in characters.
inline constexpr std::size_t kDefaultMaxTextLength = 1024;
// The widest numeric the declaration may ask for (PostgreSQL allows 1000; 38 keeps every
// value exact in the canonical forms and in other systems' decimal types).
inline constexpr int kMaxDecimalPrecision = 38;

// One declared field: its name (the column's) and the rules of its type.
struct FieldSpec {
  std::string name;
  FieldType type = FieldType::kText;
  bool required = false;                       // absent is invalid
  std::size_t max_length = kDefaultMaxTextLength;  // text only: characters
  int precision = 0;                           // decimal only: 1 … kMaxDecimalPrecision
  int scale = 0;                               // decimal only: 0 … precision
  // An empty string is absent too, as an empty delimited field always is: the built-in entity's
  // rule for account_id and occurred_at ("empty means absent"); no declaration sets it.
  bool empty_is_absent = false;
  int line = 0;  // of its name in the config file, for messages (0: not from a file)

  friend bool operator==(const FieldSpec&, const FieldSpec&) = default;
};

}  // namespace tidemark::pipeline
