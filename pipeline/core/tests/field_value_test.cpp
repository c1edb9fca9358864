#include "pipeline/core/field_value.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "pipeline/core/quoted_value.hpp"
#include "pipeline/core/validate.hpp"

namespace tidemark::pipeline {
namespace {

Field untyped(std::string text) { return Field{std::move(text), FieldKind::kUntyped}; }
Field string_field(std::string text) { return Field{std::move(text), FieldKind::kString}; }
Field number(std::string text) { return Field{std::move(text), FieldKind::kNumber}; }
Field boolean(bool value) { return Field{value ? "true" : "false", FieldKind::kBoolean}; }
Field json_source(std::string text) { return Field{std::move(text), FieldKind::kJson}; }

FieldSpec spec(FieldType type, std::string name = "f") {
  FieldSpec field;
  field.name = std::move(name);
  field.type = type;
  return field;
}

FieldSpec decimal(int precision, int scale, std::string name = "amount") {
  FieldSpec field = spec(FieldType::kDecimal, std::move(name));
  field.precision = precision;
  field.scale = scale;
  return field;
}

// The canonical form ("<absent>" when absent) or the rejection's detail prefixed "!".
std::string check(const FieldSpec& field_spec, const std::optional<Field>& value) {
  const FieldCheck result = FieldValidator(field_spec).check(value);
  if (const auto* rejection = std::get_if<Rejection>(&result)) return "!" + rejection->detail;
  const CanonicalValue& canonical = std::get<CanonicalValue>(result);
  return canonical ? *canonical : "<absent>";
}

// A value and what `check` makes of it.
struct Case {
  std::optional<Field> input;
  std::string expected;
};

// How a failure names a case's input: its kind and text, or absent.
std::string describe(const std::optional<Field>& input) {
  if (!input) return "absent";
  constexpr const char* kKinds[] = {"string", "number", "other", "boolean", "json", "untyped"};  // FieldKind's order
  return std::string(kKinds[static_cast<int>(input->kind)]) + " \"" + input->text + "\"";
}

// Each case checked against `field_spec`; a failure names the case's input.
void expect_checks(const FieldSpec& field_spec, const std::vector<Case>& cases) {
  for (const auto& c : cases) EXPECT_EQ(check(field_spec, c.input), c.expected) << "input: " << describe(c.input);
}

TEST(FieldValidator, AbsentIsAMissingKeyOrAnEmptyUntypedFieldAndRequiredRefusesIt) {
  FieldSpec field = spec(FieldType::kInteger, "quantity");
  expect_checks(field, {
      {std::nullopt, "<absent>"},
      {untyped(""), "<absent>"},
      {string_field(""), "!quantity: empty"},  // an empty JSON string is a value
  });
  field.required = true;
  expect_checks(field, {
      {std::nullopt, "!quantity: missing (required)"},
      {untyped(""), "!quantity: missing (required)"},
      {untyped("5"), "5"},
  });
}

TEST(FieldValidator, TextIsValidUtf8WithoutControlsUpToMaxLengthCharacters) {
  FieldSpec field = spec(FieldType::kText, "currency");
  field.max_length = 3;
  expect_checks(field, {
      {untyped("EUR"), "EUR"},
      {string_field(""), ""},  // an empty JSON string is an empty text
      {string_field("\xC3\xA9\xF0\x9F\x98\x80z"), "\xC3\xA9\xF0\x9F\x98\x80z"},  // 3 characters
      {untyped("EURO"), "!currency: more than 3 characters (4) in \"EURO\""},
      {untyped("E\xFF"), "!currency: invalid UTF-8 at byte 1 in \"E\\xFF\""},
      {untyped("\xC0\xAF"), "!currency: invalid UTF-8 at byte 0 in \"\\xC0\\xAF\""},  // overlong
      {untyped("\xED\xA0\x80"), "!currency: invalid UTF-8 at byte 0 in \"\\xED\\xA0\\x80\""},  // surrogate
      {untyped("a\tb"), "!currency: control character at byte 1 in \"a\\x09b\""},
      {untyped(std::string("a\0", 2)), "!currency: control character at byte 1 in \"a\\x00\""},
      {untyped("\xC2\x85"), "!currency: control character at byte 0 in \"\\xC2\\x85\""},  // C1 NEL
      // A byte order mark pasted into a file: only the file's first bytes may be one.
      {untyped("\xEF\xBB\xBF" "EU"),
       "!currency: starts with a byte order mark (U+FEFF), accepted only at the start of a file in "
       "\"\\xEF\\xBB\\xBFEU\""},
      {number("1"), "!currency: must be a string, not the number 1"},
  });
  EXPECT_EQ(check(spec(FieldType::kText), untyped(std::string(kDefaultMaxTextLength, 'x'))).size(),
            kDefaultMaxTextLength);
  EXPECT_EQ(check(spec(FieldType::kText), untyped(std::string(kDefaultMaxTextLength + 1, 'x'))),
            "!f: more than 1024 characters (1025) in \"" + std::string(kMaxQuotedBytes, 'x') + "...\"");
}

TEST(FieldValidator, IntegerIsASignedBigintOfDigitsOnly) {
  const FieldSpec field = spec(FieldType::kInteger, "quantity");
  expect_checks(field, {
      {untyped("9223372036854775807"), "9223372036854775807"},
      {untyped("-9223372036854775808"), "-9223372036854775808"},
      {number("-0"), "0"},
      {untyped("007"), "7"},
      {string_field("-12"), "-12"},
      {untyped("9223372036854775808"), "!quantity: greater than 9223372036854775807 in \"9223372036854775808\""},
      {untyped("-9223372036854775809"), "!quantity: less than -9223372036854775808 in \"-9223372036854775809\""},
  });
  for (const char* bad : {"+1", "1.0", "1e3", " 1", "1 ", "-", "--1", "0x10", "1_000"}) {
    EXPECT_EQ(check(field, number(bad)),
              "!quantity: not an integer (an optional '-', then decimal digits) in \"" + std::string(bad) + "\"")
        << bad;
  }
  EXPECT_EQ(check(field, boolean(true)), "!quantity: must be an integer (a number or a string), not the boolean true");
}

TEST(FieldValidator, DecimalIsPaddedToTheScaleAndNeverRoundedOrOverflowed) {
  const FieldSpec field = decimal(14, 4);
  expect_checks(field, {
      {untyped("1.5"), "1.5000"},
      {number("2.25"), "2.2500"},
      {string_field("+0012.3456"), "12.3456"},
      {untyped("-0.0"), "0.0000"},
      {untyped("-7"), "-7.0000"},
      {untyped("9999999999.9999"), "9999999999.9999"},
      {untyped("1.23456"), "!amount: more than 4 fraction digits in \"1.23456\""},
      {untyped("10000000000"), "!amount: more than 10 integer digits in \"10000000000\""},
  });
  for (const char* bad : {"1e3", "NaN", "Infinity", "-Infinity", ".5", "5.", "1,5", " 1", "0x1", "--1", ""}) {
    if (std::string_view(bad).empty()) continue;  // empty untyped is absent, tested above
    EXPECT_EQ(check(field, untyped(bad)),
              "!amount: not a plain decimal ([+-]digits[.1-4 digits]) in \"" + std::string(bad) + "\"")
        << bad;
  }
  EXPECT_EQ(check(field, string_field("")), "!amount: empty");
  EXPECT_EQ(check(field, json_source("[1]")),
            "!amount: must be a decimal (a number or a string), not the object or array [1]");
}

TEST(FieldValidator, DecimalEdgesPerPrecisionAndScale) {
  const std::string nines38(38, '9');
  expect_checks(decimal(38, 0), {
      {untyped(nines38), nines38},
      {untyped("-" + nines38), "-" + nines38},
      {untyped("1" + std::string(38, '0')), "!amount: more than 38 integer digits in \"1" + std::string(38, '0') + "\""},
      {untyped("5.0"), "!amount: more than 0 fraction digits in \"5.0\""},
      {untyped("5."), "!amount: not a plain decimal ([+-]digits) in \"5.\""},
  });
  expect_checks(decimal(38, 38), {
      {untyped("0." + nines38), "0." + nines38},
      {untyped("-0.5"), "-0.50000000000000000000000000000000000000"},
      {untyped("1.0"), "!amount: more than 0 integer digits in \"1.0\""},
  });
  EXPECT_EQ(check(decimal(2, 2), untyped("000.99")), "0.99");
  expect_checks(decimal(1, 0), {
      {untyped("-9"), "-9"},
      {untyped("-0"), "0"},
      {untyped("10"), "!amount: more than 1 integer digits in \"10\""},
  });
  EXPECT_EQ(check(decimal(12, 2), untyped("130.0")), "130.00");  // amount's own rule, generalised
}

TEST(FieldValidator, DecimalSpecOutOfRangeIsAProgrammingError) {
  EXPECT_THROW(FieldValidator(decimal(39, 0)), std::invalid_argument);
  EXPECT_THROW(FieldValidator(decimal(5, 6)), std::invalid_argument);
  EXPECT_THROW(FieldValidator(decimal(0, 0)), std::invalid_argument);
}

TEST(FieldValidator, TimestampIsRfc3339WithOffsetInUtcMicroseconds) {
  const FieldSpec field = spec(FieldType::kTimestamp, "placed_at");
  expect_checks(field, {
      {untyped("2024-05-01T10:00:00+02:00"), "2024-05-01T08:00:00.000000Z"},
      {string_field("2024-05-01t08:00:00.5z"), "2024-05-01T08:00:00.500000Z"},
      {untyped("2024-02-29T23:30:00-01:00"), "2024-03-01T00:30:00.000000Z"},
      {untyped("2024-05-01T08:00:00"), "!placed_at: no UTC offset (Z or +HH:MM) in \"2024-05-01T08:00:00\""},
      {untyped("2024-05-01T08:00:00.1234567Z"), "!placed_at: more than 6 fraction digits in \"2024-05-01T08:00:00.1234567Z\""},
      {untyped("2016-12-31T23:59:60Z"), "!placed_at: second out of range in \"2016-12-31T23:59:60Z\""},
  });
  EXPECT_EQ(check(field, untyped("2024-05-01 08:00:00Z")).substr(0, 32), "!placed_at: not an RFC 3339 time");
  EXPECT_EQ(check(field, number("1714550400")), "!placed_at: must be a string, not the number 1714550400");
}

TEST(FieldValidator, TimestampLimitsAreYears0001To9999InUtc) {
  const FieldSpec field = spec(FieldType::kTimestamp, "placed_at");
  const auto outside = [](std::string_view text) {
    return "!placed_at: outside 0001-01-01T00:00:00Z ... 9999-12-31T23:59:59.999999Z in UTC in \"" +
           std::string(text) + "\"";
  };
  EXPECT_EQ(check(field, untyped("0001-01-01T00:00:00Z")), "0001-01-01T00:00:00.000000Z");
  EXPECT_EQ(check(field, untyped("9999-12-31T23:59:59.999999Z")), "9999-12-31T23:59:59.999999Z");
  EXPECT_EQ(format_timestamp(kMinTimestampMicros), "0001-01-01T00:00:00.000000Z");
  EXPECT_EQ(format_timestamp(kMaxTimestampMicros), "9999-12-31T23:59:59.999999Z");
  // One microsecond beyond each end: before year 1 only an offset can reach; after 9999, too.
  expect_checks(field, {
      {untyped("0001-01-01T00:00:00.999999+00:01"), outside("0001-01-01T00:00:00.999999+00:01")},
      {untyped("0001-01-01T00:59:59.999999+01:00"), outside("0001-01-01T00:59:59.999999+01:00")},
      {untyped("9999-12-31T23:59:59.999999-00:00"), "9999-12-31T23:59:59.999999Z"},
      {untyped("9999-12-31T23:00:00-01:00"), outside("9999-12-31T23:00:00-01:00")},
      {untyped("0001-01-01T01:00:00+01:00"), "0001-01-01T00:00:00.000000Z"},
      {untyped("9999-12-31T22:59:59.999999-01:00"), "9999-12-31T23:59:59.999999Z"},
      {untyped("0000-12-31T23:59:59.999999Z"), "!placed_at: year out of range in \"0000-12-31T23:59:59.999999Z\""},
  });
  EXPECT_EQ(check(field, untyped("10000-01-01T00:00:00Z")).substr(0, 32), "!placed_at: not an RFC 3339 time");
}

TEST(FieldValidator, DateIsARealCalendarDateOfYears0001To9999) {
  const FieldSpec field = spec(FieldType::kDate, "ship_date");
  expect_checks(field, {
      {untyped("2024-02-29"), "2024-02-29"},  // leap year
      {untyped("2000-02-29"), "2000-02-29"},  // divisible by 400
      {untyped("2023-02-29"), "!ship_date: day out of range in \"2023-02-29\""},
      {untyped("1900-02-29"), "!ship_date: day out of range in \"1900-02-29\""},
      {untyped("0001-01-01"), "0001-01-01"},
      {untyped("9999-12-31"), "9999-12-31"},
      {untyped("0000-12-31"), "!ship_date: year out of range in \"0000-12-31\""},
      {untyped("2024-04-31"), "!ship_date: day out of range in \"2024-04-31\""},
      {untyped("2024-13-01"), "!ship_date: month out of range in \"2024-13-01\""},
      {untyped("2024-00-10"), "!ship_date: month out of range in \"2024-00-10\""},
  });
  for (const char* bad : {"2024-5-01", "24-05-01", "2024/05/01", "2024-05-01T00:00:00Z", "10000-01-01", "2024-05-1 "}) {
    EXPECT_EQ(check(field, untyped(bad)), "!ship_date: not a date (YYYY-MM-DD) in \"" + std::string(bad) + "\"") << bad;
  }
  EXPECT_EQ(check(field, boolean(true)), "!ship_date: must be a string, not the boolean true");
}

TEST(FieldValidator, BooleanIsTrueOrFalseAndInJsonOnlyAJsonBoolean) {
  const FieldSpec field = spec(FieldType::kBoolean, "paid");
  expect_checks(field, {
      {boolean(true), "true"},
      {boolean(false), "false"},
      {untyped("true"), "true"},
      {untyped("false"), "false"},
  });
  for (const char* bad : {"TRUE", "True", "t", "1", "yes", "on"}) {
    EXPECT_EQ(check(field, untyped(bad)), "!paid: not a boolean (true or false) in " + quoted_value(bad)) << bad;
  }
  expect_checks(field, {
      {string_field("true"), "!paid: must be a boolean, not the string \"true\""},
      {number("1"), "!paid: must be a boolean, not the number 1"},
      {Field{"true", FieldKind::kOther}, "!paid: must be a boolean, not the JSON value true"},
  });
}

TEST(FieldValidator, JsonTakesAnyJsonValueAndPrintsItAsJsonb) {
  const FieldSpec field = spec(FieldType::kJson, "meta");
  expect_checks(field, {
      {json_source(R"({"b":1, "a":[1e2,"x"]})"), R"({"a": [100, "x"], "b": 1})"},
      {untyped(R"({"b":1,"b":2})"), R"({"b": 2})"},  // text that parses as JSON
      {untyped("\"abc\""), "\"abc\""},
      {untyped("abc"), "!meta: not a JSON value at byte 0 in \"abc\""},
      {string_field("abc"), "\"abc\""},  // a JSON string value
      {string_field("{\"a\":1}"), R"("{\"a\":1}")"},  // a string, not an object
      {string_field("tab\there"), R"("tab\there")"},
      {number("1.50"), "1.50"},
      {number("-0"), "0"},
      {boolean(false), "false"},
      {untyped("null"), "<absent>"},  // null is absent
      {untyped(R"("\u0000")"), R"(!meta: \u0000 (jsonb cannot hold NUL) at byte 7 in "\"\\u0000\"")"},
      {string_field(std::string("a\0b", 3)), "!meta: \\u0000 (jsonb cannot hold NUL) in \"a\\x00b\""},
      {string_field("a\xFF"), "!meta: invalid UTF-8 at byte 1 in \"a\\xFF\""},
      {number("1e131072"), "!meta: more than 131072 digits before the point at byte 0 in \"1e131072\""},
      {Field{"object", FieldKind::kOther},
       "!meta: must be a JSON value given with its source text, not the JSON value object"},
  });
  FieldSpec required = field;
  required.required = true;
  EXPECT_EQ(check(required, untyped("null")), "!meta: missing (required)");
  EXPECT_EQ(check(required, json_source("[null]")), "[null]");
}

TEST(FieldValidator, CanonicalValuesCheckAgainAsThemselves) {
  const std::vector<std::pair<FieldSpec, std::string>> inputs = {
      {decimal(14, 4), "-0012.5"},
      {spec(FieldType::kInteger), "-000"},
      {spec(FieldType::kTimestamp), "2024-05-01T10:00:00.1+02:00"},
      {spec(FieldType::kDate), "2024-02-29"},
      {spec(FieldType::kBoolean), "true"},
      {spec(FieldType::kJson), R"({"b":[1.0e1,{"y":"\u0007","x":-0}],"a":"é"})"},
      {spec(FieldType::kText), "x y"},
  };
  for (const auto& [field, text] : inputs) {
    const std::string once = check(field, untyped(text));
    ASSERT_NE(once.front(), '!') << text;
    EXPECT_EQ(check(field, untyped(once)), once) << text;
  }
}

TEST(FieldPlan, ChecksEachFieldInDeclarationOrderAndNamesTheFirstAtFault) {
  FieldSpec currency = spec(FieldType::kText, "currency");
  currency.max_length = 3;
  currency.required = true;
  const FieldPlan plan({decimal(14, 4), currency, spec(FieldType::kBoolean, "paid")});
  ASSERT_EQ(plan.fields().size(), 3u);
  EXPECT_EQ(plan.fields()[1].spec(), currency);

  const std::vector<std::optional<Field>> good = {number("2.25"), string_field("EUR"), std::nullopt};
  const auto accepted = plan.check(good);
  ASSERT_TRUE(std::holds_alternative<std::vector<CanonicalValue>>(accepted));
  EXPECT_EQ(std::get<std::vector<CanonicalValue>>(accepted),
            (std::vector<CanonicalValue>{"2.2500", "EUR", std::nullopt}));

  const std::vector<std::optional<Field>> bad = {number("2.25"), std::nullopt, string_field("yes")};
  const auto rejected = plan.check(bad);
  ASSERT_TRUE(std::holds_alternative<FieldFault>(rejected));
  EXPECT_EQ(std::get<FieldFault>(rejected).field, 1u);
  EXPECT_EQ(std::get<FieldFault>(rejected).rejection.detail, "currency: missing (required)");

  const std::vector<std::optional<Field>> short_by_one = {number("1")};
  EXPECT_THROW((void)plan.check(short_by_one), std::invalid_argument);
}

}  // namespace
}  // namespace tidemark::pipeline
