// libFuzzer target: the entity field validators (pipeline/core/field_value) on arbitrary
// values. The first three bytes pick the declared field: its type (byte 0 % 7, bit 3 of it
// `required`), a decimal's precision 1-38 and scale 0-precision, or a text's max_length
// (byte 1); byte 2 % 6 picks how the value arrived (string, number, other, boolean, json
// source, untyped text). The rest is the value's text. Properties: nothing crashes; an accepted
// value's canonical form checks again as itself (so it is a fixed point, json's included);
// a decimal's canonical form has exactly `scale` fraction digits and fits numeric(p,s); a
// timestamp's is in 0001-9999; json's canonical text parses to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "pipeline/core/field_value.hpp"
#include "pipeline/core/json_value.hpp"
#include "pipeline/core/validate.hpp"

namespace {

using namespace tidemark::pipeline;

void require(bool property) {
  if (!property) std::abort();
}

// A decimal's canonical form: optional '-', at most p - s integer digits with no leading zero
// (or one "0"), then exactly s fraction digits.
void check_decimal_shape(const std::string& canonical, const FieldSpec& spec) {
  std::string_view rest = canonical;
  if (!rest.empty() && rest.front() == '-') rest.remove_prefix(1);
  const std::size_t point = rest.find('.');
  const std::string_view integer = rest.substr(0, point);
  require(!integer.empty() && integer.find_first_not_of("0123456789") == std::string_view::npos);
  require(integer.size() == 1 || integer.front() != '0');
  require(integer == "0" || integer.size() <= static_cast<std::size_t>(spec.precision - spec.scale));
  const std::size_t fraction = point == std::string_view::npos ? 0 : rest.size() - point - 1;
  require(fraction == static_cast<std::size_t>(spec.scale));
  require(spec.scale > 0 || point == std::string_view::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  constexpr FieldKind kKinds[] = {FieldKind::kString,  FieldKind::kNumber, FieldKind::kOther,
                                  FieldKind::kBoolean, FieldKind::kJson,   FieldKind::kUntyped};
  FieldSpec spec;
  spec.name = "f";
  spec.type = static_cast<FieldType>(data[0] % 7);
  spec.required = (data[0] & 0x08) != 0;
  spec.precision = 1 + data[1] % kMaxDecimalPrecision;
  spec.scale = (data[1] / kMaxDecimalPrecision) % (spec.precision + 1);
  spec.max_length = data[1] == 0 ? kDefaultMaxTextLength : data[1] % 64;
  const FieldKind kind = kKinds[data[2] % 6];
  const Field field{std::string(reinterpret_cast<const char*>(data) + 3, size - 3), kind};

  const FieldValidator validator(spec);
  const FieldCheck result = validator.check(field);
  if (const auto* rejection = std::get_if<Rejection>(&result)) {
    require(rejection->detail.starts_with("f: "));
    return 0;
  }
  const CanonicalValue& canonical = std::get<CanonicalValue>(result);
  if (!canonical) {
    require(!spec.required);
    return 0;
  }
  // Checked again as untyped text (the way a CSV field would bring it back), except a
  // boolean, which only its own kind or untyped text may carry: either way it is itself.
  if (!canonical->empty()) {
    const FieldCheck again = validator.check(Field{*canonical, FieldKind::kUntyped});
    require(std::holds_alternative<CanonicalValue>(again) && std::get<CanonicalValue>(again) == canonical);
  }
  switch (spec.type) {
    case FieldType::kText: require(*canonical == field.text); break;
    case FieldType::kInteger: require(std::holds_alternative<std::int64_t>(parse_integer(*canonical, true))); break;
    case FieldType::kDecimal: check_decimal_shape(*canonical, spec); break;
    case FieldType::kTimestamp: {
      const auto micros = parse_timestamp(*canonical);
      require(std::holds_alternative<std::int64_t>(micros));
      require(std::get<std::int64_t>(micros) >= kMinTimestampMicros);
      require(std::get<std::int64_t>(micros) <= kMaxTimestampMicros);
      require(format_timestamp(std::get<std::int64_t>(micros)) == *canonical);
      break;
    }
    case FieldType::kDate: require(canonical->size() == 10); break;
    case FieldType::kBoolean: require(*canonical == "true" || *canonical == "false"); break;
    case FieldType::kJson: {
      const auto reparsed = canonical_json(*canonical);
      require(std::holds_alternative<std::string>(reparsed) && std::get<std::string>(reparsed) == *canonical);
      break;
    }
  }
  return 0;
}
