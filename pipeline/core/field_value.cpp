#include "pipeline/core/field_value.hpp"

#include <cstdint>
#include <stdexcept>
#include <utility>

#include "pipeline/core/json_value.hpp"
#include "pipeline/core/quoted_value.hpp"
#include "pipeline/core/utf8.hpp"
#include "pipeline/core/validate.hpp"

namespace tidemark::pipeline {

namespace {

// A rejection of `text` whose rule does not quote it already: every detail shows the value
// it refuses.
Rejection rejected_in(std::string rule, std::string_view text) {
  return Rejection{std::move(rule) + " in " + quoted_value(text)};
}

// A JSON rejection (which names the rule and the byte) with the value it refuses.
std::variant<std::string, Rejection> with_value_quoted(std::variant<std::string, Rejection> value,
                                                       std::string_view text) {
  if (auto* rejection = std::get_if<Rejection>(&value)) return rejected_in(std::move(rejection->detail), text);
  return value;
}

// Whether a value is absent: JSON null and a missing key arrive as nullopt; an untyped
// (delimited text) field is absent when empty. An empty JSON string is a value, unless the
// field takes empty strings as absent (FieldSpec::empty_is_absent).
bool absent(const std::optional<Field>& field, const FieldSpec& spec) {
  if (!field) return true;
  const bool empty_absent = field->kind == FieldKind::kUntyped || (spec.empty_is_absent && is_text_kind(field->kind));
  return empty_absent && field->text.empty();
}

}  // namespace

FieldValidator::FieldValidator(FieldSpec spec) : spec_(std::move(spec)) {
  if (spec_.type == FieldType::kDecimal &&
      (spec_.precision < 1 || spec_.precision > kMaxDecimalPrecision || spec_.scale < 0 ||
       spec_.scale > spec_.precision)) {
    // The declaration parser refuses these with file:line; reaching here is a programming error.
    throw std::invalid_argument("field " + spec_.name + ": decimal precision/scale out of range");
  }
}

FieldCheck FieldValidator::check(const std::optional<Field>& field) const {
  if (absent(field, spec_)) {
    if (spec_.required) return Rejection{spec_.name + ": missing (required)"};
    return CanonicalValue{};
  }
  auto value = canonical(*field);
  if (auto* rejection = std::get_if<Rejection>(&value)) return Rejection{spec_.name + ": " + rejection->detail};
  // A json null is absent, like a JSON null in the record itself.
  if (spec_.type == FieldType::kJson && std::get<std::string>(value) == "null") {
    if (spec_.required) return Rejection{spec_.name + ": missing (required)"};
    return CanonicalValue{};
  }
  return CanonicalValue{std::move(std::get<std::string>(value))};
}

std::variant<std::string, Rejection> FieldValidator::canonical(const Field& field) const {
  const bool text = is_text_kind(field.kind);
  switch (spec_.type) {
    case FieldType::kText: {
      if (!text) return Rejection{wrong_kind("a string", field)};
      if (auto problem = text_problem(field.text, spec_.max_length)) return Rejection{std::move(*problem)};
      return field.text;
    }
    case FieldType::kInteger: {
      if (!text && field.kind != FieldKind::kNumber) {
        return Rejection{wrong_kind("an integer (a number or a string)", field)};
      }
      const auto value = parse_integer(field.text, /*allow_minus=*/true);
      if (const auto* rejection = std::get_if<Rejection>(&value)) return *rejection;
      return std::to_string(std::get<std::int64_t>(value));
    }
    case FieldType::kDecimal: {
      if (!text && field.kind != FieldKind::kNumber) {
        return Rejection{wrong_kind("a decimal (a number or a string)", field)};
      }
      return parse_decimal(field.text, spec_.precision, spec_.scale);
    }
    case FieldType::kTimestamp: {
      if (!text) return Rejection{wrong_kind("a string", field)};
      const auto micros = parse_timestamp(field.text);
      if (const auto* rejection = std::get_if<Rejection>(&micros)) return *rejection;
      return format_timestamp(std::get<std::int64_t>(micros));
    }
    case FieldType::kDate: {
      if (!text) return Rejection{wrong_kind("a string", field)};
      const auto days = parse_date(field.text);
      if (const auto* rejection = std::get_if<Rejection>(&days)) return *rejection;
      return field.text;  // YYYY-MM-DD with four-digit years is already date's ISO output
    }
    case FieldType::kBoolean: {
      // In JSON only a boolean: a JSON string "true" is a type mistake, not a boolean.
      if (field.kind != FieldKind::kBoolean && field.kind != FieldKind::kUntyped) {
        return Rejection{wrong_kind("a boolean", field)};
      }
      if (field.text == "true" || field.text == "false") return field.text;
      return rejected_in("not a boolean (true or false)", field.text);
    }
    case FieldType::kJson: {
      switch (field.kind) {
        case FieldKind::kString: {
          // A JSON string value, decoded already: re-check what jsonb refuses in one.
          for (std::size_t i = 0; i < field.text.size();) {
            const std::size_t length = storable_utf8_length(std::string_view(field.text).substr(i));
            if (length == 0) {
              return rejected_in(field.text[i] == '\0' ? std::string("\\u0000 (jsonb cannot hold NUL)")
                                                         : "invalid UTF-8 at byte " + std::to_string(i),
                                 field.text);
            }
            i += length;
          }
          return json_quoted(field.text);
        }
        case FieldKind::kNumber: return with_value_quoted(canonical_json_number(field.text), field.text);
        case FieldKind::kBoolean:
        case FieldKind::kJson:
        case FieldKind::kUntyped: return with_value_quoted(canonical_json(field.text), field.text);
        case FieldKind::kOther: break;
      }
      return Rejection{wrong_kind("a JSON value given with its source text", field)};
    }
  }
  return Rejection{wrong_kind("of a known type", field)};  // only a FieldType cast from outside its enumerators
}

FieldPlan::FieldPlan(const std::vector<FieldSpec>& specs) {
  fields_.reserve(specs.size());
  for (const FieldSpec& spec : specs) fields_.emplace_back(spec);
}

std::variant<std::vector<CanonicalValue>, FieldFault> FieldPlan::check(
    std::span<const std::optional<Field>> values) const {
  if (values.size() != fields_.size()) {
    throw std::invalid_argument("field plan: " + std::to_string(values.size()) + " values for " +
                                std::to_string(fields_.size()) + " fields");
  }
  std::vector<CanonicalValue> canonical;
  canonical.reserve(fields_.size());
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    auto checked = fields_[i].check(values[i]);
    if (auto* rejection = std::get_if<Rejection>(&checked)) return FieldFault{i, std::move(*rejection)};
    canonical.push_back(std::move(std::get<CanonicalValue>(checked)));
  }
  return canonical;
}

}  // namespace tidemark::pipeline
