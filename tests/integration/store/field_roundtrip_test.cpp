// Differential property: every value an entity field validator accepts is stored
// by PostgreSQL in the column type docs/entities.md "Field types" names, and reads back as the
// validator's canonical form; so the canonical forms compared for conflicts are PostgreSQL's.
// Each accepted value is inserted twice, as the source wrote it and in canonical form, into
// the same column type; both must read back as the canonical form. Read back with `::text`
// (session TimeZone UTC, DateStyle ISO), except timestamptz, which is read back with
// to_char(v AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'): ::text trims the
// microseconds. Inputs come from generators aimed at the edges of each rule (fixed seed,
// printed on failure); the rejected ones are counted to show the generators reach both sides,
// and the text refused as invalid UTF-8 and the JSON refused must be refused by PostgreSQL too.
#include <gtest/gtest.h>

#include <initializer_list>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "pipeline/core/field_value.hpp"
#include "pipeline/core/utf8.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::pipeline {
namespace {

using testing::TestDatabase;

class ValueInputs {
 public:
  explicit ValueInputs(std::uint64_t seed) : rng_(seed) {}

  int pick(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }

  std::string pick_of(std::initializer_list<const char*> options) {
    return *(options.begin() + pick(0, static_cast<int>(options.size()) - 1));
  }

  std::string digits(int count) {
    std::string text;
    for (int i = 0; i < count; ++i) text += static_cast<char>('0' + pick(0, 9));
    return text;
  }

  std::string two(int low, int high) {
    const int value = pick(low, high);
    return std::string(value < 10 ? "0" : "") + std::to_string(value);
  }

  Field value(const FieldSpec& spec) {
    switch (spec.type) {
      case FieldType::kText: return {text(spec.max_length), pick(0, 1) ? FieldKind::kUntyped : FieldKind::kString};
      case FieldType::kInteger: return {integer(), number_kind()};
      case FieldType::kDecimal: return {decimal(spec.precision, spec.scale), number_kind()};
      case FieldType::kTimestamp: return {timestamp(), pick(0, 1) ? FieldKind::kUntyped : FieldKind::kString};
      case FieldType::kDate: return {date(), pick(0, 1) ? FieldKind::kUntyped : FieldKind::kString};
      case FieldType::kBoolean: {
        const std::string text = pick(0, 4) ? pick_of({"true", "false"}) : pick_of({"TRUE", "t", "1", "yes", ""});
        return {text, pick(0, 1) ? FieldKind::kBoolean : FieldKind::kUntyped};
      }
      case FieldType::kJson: {
        switch (pick(0, 3)) {
          case 0: return {string_value(), FieldKind::kString};  // a JSON string, decoded
          case 1: return {number(), FieldKind::kNumber};
          case 2: return {"[" + json(0) + "]", FieldKind::kJson};
          default: return {json(0), FieldKind::kUntyped};
        }
      }
    }
    return {};
  }

 private:
  FieldKind number_kind() {
    const int kind = pick(0, 2);
    return kind == 0 ? FieldKind::kNumber : kind == 1 ? FieldKind::kString : FieldKind::kUntyped;
  }

  std::string text(std::size_t max_length) {
    static const std::vector<std::string> kPieces = {"a", "Z", "7", " ", "'", "\\", "\"", ",", "\xC3\xA9",
                                                     "\xF0\x9F\x98\x80", "\xE2\x82\xAC", "\t", "\x7F", "\xC2\x85",
                                                     "\xFF", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80"};
    std::string value;
    const int length = pick(0, 3) == 0 ? static_cast<int>(max_length) + pick(-2, 1) : pick(1, 12);
    for (int i = 0; i < length; ++i) value += kPieces[static_cast<std::size_t>(pick(0, pick(0, 4) == 0 ? 17 : 10))];
    return value;
  }

  std::string integer() {
    if (pick(0, 3) == 0) {
      return pick_of({"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
                      "-0", "0", "+1", "007", "1.0", "1e3", "-"});
    }
    return std::string(pick(0, 1) ? "-" : "") + std::string(static_cast<std::size_t>(pick(0, 2)), '0') +
           digits(pick(1, 19));
  }

  std::string decimal(int precision, int scale) {
    if (pick(0, 9) == 0) return pick_of({"NaN", "Infinity", "1e3", ".5", "5.", "-0", "-0.0", "+0"});
    const int whole = precision - scale;
    std::string value = pick_of({"", "", "-", "+"}) + std::string(static_cast<std::size_t>(pick(0, 1)), '0');
    // Mostly at the limits: all nines, one digit more, or anything in between.
    const int integer_digits = pick(0, 2) == 0 ? whole + pick(0, 1) : pick(0, whole);
    value += integer_digits == 0 ? "0" : (pick(0, 1) ? std::string(static_cast<std::size_t>(integer_digits), '9')
                                                     : "1" + digits(integer_digits - 1));
    const int fraction_digits = pick(0, 2) == 0 ? scale + pick(0, 1) : pick(0, scale);
    if (fraction_digits > 0) {
      value += "." + (pick(0, 1) ? std::string(static_cast<std::size_t>(fraction_digits), '9') : digits(fraction_digits));
    }
    return value;
  }

  std::string year() {
    const int value = pick(0, 2) == 0 ? pick(0, 2) : pick(0, 2) == 0 ? pick(9998, 9999) : pick(1, 9999);
    std::string text = std::to_string(value);
    while (text.size() < 4) text.insert(0, "0");
    return text;
  }

  std::string date() {
    if (pick(0, 3) == 0) return year() + pick_of({"-02-28", "-02-29", "-02-30", "-12-31", "-01-01", "-04-31"});
    return year() + "-" + two(0, 13) + "-" + two(0, 32);
  }

  std::string timestamp() {
    std::string value;
    switch (pick(0, 3)) {
      case 0: value = "0001-01-01" + pick_of({"T", "t"}) + two(0, 1) + ":" + two(0, 59) + ":" + two(0, 59); break;
      case 1: value = "9999-12-31T" + two(22, 23) + ":" + two(0, 59) + ":" + two(58, 60); break;
      default: value = date() + pick_of({"T", "T", "t", " "}) + two(0, 24) + ":" + two(0, 60) + ":" + two(0, 60);
    }
    if (pick(0, 1)) value += "." + (pick(0, 1) ? std::string(static_cast<std::size_t>(pick(1, 7)), '9') : digits(pick(1, 7)));
    // Offsets up to 15:59: RFC 3339 (and the validator) allow up to 23:59, but PostgreSQL's
    // input refuses more than 15:59, and the source text is inserted as it is here.
    value += pick(0, 2) == 0 ? pick_of({"Z", "z", ""})
                             : std::string(pick(0, 1) ? "+" : "-") + two(0, pick(0, 1) ? 1 : 15) + ":" + two(0, 60);
    return value;
  }

  // A decoded string: what a JSON string carries once its escapes are read.
  std::string string_value() {
    static const std::vector<std::string> kPieces = {"a", "\"", "\\", "/", "\b", "\f", "\n", "\r", "\t", "\x01",
                                                     "\x1F", "\x7F", "\xC3\xA9", "\xF0\x9F\x98\x80", " ",
                                                     std::string(1, '\0'), "\xFF"};
    std::string value;
    for (int i = pick(0, 6); i > 0; --i) value += kPieces[static_cast<std::size_t>(pick(0, pick(0, 5) == 0 ? 16 : 14))];
    return value;
  }

  std::string number() {
    std::string value = pick(0, 3) == 0 ? "-" : "";
    value += pick(0, 3) == 0 ? "0" : std::to_string(pick(1, 9)) + digits(pick(0, 25));
    if (pick(0, 1)) value += "." + digits(pick(1, 12));
    if (pick(0, 2) == 0) {
      value += pick_of({"e", "E", "e+", "e-", "E-"}) +
               (pick(0, 9) == 0 ? pick_of({"16383", "16384", "131071", "131072", "2000000000"}) : std::to_string(pick(0, 40)));
    }
    if (pick(0, 30) == 0) value = pick_of({"01", "1.", ".5", "+1", "NaN", "1e"});
    return value;
  }

  std::string quoted_string() {
    static const std::vector<std::string> kEscapes = {"a", "b", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r",
                                                      "\\t", "\\u00e9", "\\u00E9", "\\u001f", "\\u007F", "\\ud83d\\ude00",
                                                      "\xC3\xA9", "\\uFFFF", "\\u0000", "\\ud83d", "\\ude00", "\t"};
    std::string value = "\"";
    for (int i = pick(0, 5); i > 0; --i) {
      value += kEscapes[static_cast<std::size_t>(pick(0, pick(0, 6) == 0 ? 20 : 16))];
    }
    return value + "\"";
  }

  std::string space() { return pick(0, 3) == 0 ? pick_of({" ", "\n", "\t ", "\r\n"}) : ""; }

  std::string json(int depth) {
    const int choice = depth > 3 ? pick(0, 3) : pick(0, 6);
    std::string value;
    switch (choice) {
      case 0: value = pick_of({"true", "false", "null"}); break;
      case 1: value = number(); break;
      case 2:
      case 3: value = quoted_string(); break;
      case 4: {
        value = "[";
        for (int i = pick(0, 3); i > 0; --i) value += json(depth + 1) + (i > 1 ? "," : "");
        value += "]";
        break;
      }
      default: {
        // Few, short keys, so that lengths tie and duplicates happen.
        value = "{";
        for (int i = pick(0, 4); i > 0; --i) {
          value += "\"" + pick_of({"a", "b", "aa", "ab", "B", "\xC3\xA9", "", "key"}) + "\"" + space() + ":" + space() +
                   json(depth + 1) + (i > 1 ? "," : "");
        }
        value += "}";
      }
    }
    return space() + value + space();
  }

  std::mt19937_64 rng_;
};

FieldSpec field_spec(std::string name, FieldType type, int precision = 0, int scale = 0, std::size_t max_length = 0) {
  FieldSpec spec;
  spec.name = std::move(name);
  spec.type = type;
  spec.precision = precision;
  spec.scale = scale;
  if (max_length > 0) spec.max_length = max_length;
  return spec;
}

// The column type docs/entities.md "Field types" names for each field type.
std::string column_type(const FieldSpec& spec) {
  switch (spec.type) {
    case FieldType::kText: return "text";
    case FieldType::kInteger: return "bigint";
    case FieldType::kDecimal: return "numeric(" + std::to_string(spec.precision) + "," + std::to_string(spec.scale) + ")";
    case FieldType::kTimestamp: return "timestamptz";
    case FieldType::kDate: return "date";
    case FieldType::kBoolean: return "boolean";
    case FieldType::kJson: return "jsonb";
  }
  return "?";
}

std::string read_back(const FieldSpec& spec, const std::string& column) {
  if (spec.type == FieldType::kTimestamp) {
    return "to_char(" + column + " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')";
  }
  return column + "::text";
}

TEST(FieldValuesAgainstPostgres, EveryAcceptedValueIsStoredAndReadsBackInCanonicalForm) {
  constexpr std::uint64_t kSeed = 20261201;
  constexpr int kValuesPerField = 1500;
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  ValueInputs inputs(kSeed);
  const std::vector<FieldSpec> specs = {
      field_spec("text_8", FieldType::kText, 0, 0, 8),
      field_spec("text_default", FieldType::kText),
      field_spec("integer", FieldType::kInteger),
      field_spec("decimal_1_0", FieldType::kDecimal, 1, 0),
      field_spec("decimal_2_2", FieldType::kDecimal, 2, 2),
      field_spec("decimal_12_2", FieldType::kDecimal, 12, 2),
      field_spec("decimal_14_4", FieldType::kDecimal, 14, 4),
      field_spec("decimal_18_6", FieldType::kDecimal, 18, 6),
      field_spec("decimal_38_0", FieldType::kDecimal, 38, 0),
      field_spec("decimal_38_10", FieldType::kDecimal, 38, 10),
      field_spec("decimal_38_38", FieldType::kDecimal, 38, 38),
      field_spec("timestamp", FieldType::kTimestamp),
      field_spec("date", FieldType::kDate),
      field_spec("boolean", FieldType::kBoolean),
      field_spec("json", FieldType::kJson),
  };

  TestDatabase db;
  auto connection = db.connect();
  pqxx::nontransaction txn(*connection);
  txn.exec("SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET synchronous_commit = off");
  for (const FieldSpec& spec : specs) {
    SCOPED_TRACE(spec.name + " " + column_type(spec));
    const FieldValidator validator(spec);
    const std::string table = "roundtrip_" + spec.name;
    txn.exec("CREATE TABLE " + table + " (id integer PRIMARY KEY, original " + column_type(spec) + ", canonical " +
             column_type(spec) + ")");
    // The source's own text reaches the column through the type's input function, except a
    // decoded JSON string, which is not JSON text until to_jsonb quotes it.
    const std::string insert_plain = "INSERT INTO " + table + " VALUES ($1, $2, $3)";
    const std::string insert_json_string = "INSERT INTO " + table + " VALUES ($1, to_jsonb($2::text), $3)";
    std::map<int, std::pair<std::string, std::string>> expected;  // id -> source text, canonical
    int rejected = 0;
    int stored = 0;
    int refusals_compared = 0;
    for (int id = 0; id < kValuesPerField; ++id) {
      const Field field = inputs.value(spec);
      const FieldCheck checked = validator.check(field);
      if (const auto* rejection = std::get_if<Rejection>(&checked)) {
        ++rejected;
        // The other direction, where the rule is PostgreSQL's and not Tidemark's own
        // stricter one (control characters, leap seconds, rounding): what the validator
        // refuses as invalid UTF-8 or as JSON, PostgreSQL refuses too.
        std::optional<std::string> refusal_query;
        std::string argument = field.text;
        if (spec.type == FieldType::kText && rejection->detail.find("invalid UTF-8") != std::string::npos) {
          refusal_query = "SELECT convert_from(decode($1, 'hex'), 'UTF8')";
          argument.clear();
          append_hex(argument, field.text);
        } else if (spec.type == FieldType::kJson && field.kind != FieldKind::kString &&
                   field.kind != FieldKind::kOther) {
          refusal_query = "SELECT $1::jsonb";
        }
        if (refusal_query) {
          ++refusals_compared;
          try {
            txn.exec_params(*refusal_query, argument);
            ADD_FAILURE() << "rejected (" << rejection->detail << ") but PostgreSQL stores it: "
                          << escape_bytes(field.text);
          } catch (const pqxx::data_exception&) {
          }
        }
        continue;
      }
      const CanonicalValue& canonical = std::get<CanonicalValue>(checked);
      if (!canonical) continue;  // absent: a NULL, nothing to compare
      const bool json_string = spec.type == FieldType::kJson && field.kind == FieldKind::kString;
      try {
        txn.exec_params(json_string ? insert_json_string : insert_plain, id, field.text, *canonical);
        expected[id] = {field.text, *canonical};
        ++stored;
      } catch (const pqxx::sql_error& error) {
        ADD_FAILURE() << "accepted but refused by PostgreSQL: " << escape_bytes(field.text) << " -> "
                      << escape_bytes(*canonical) << ": " << error.what();
      }
    }
    // Both sides of the rules are reached, or the property proves little.
    EXPECT_GT(stored, kValuesPerField / 5);
    EXPECT_GT(rejected, kValuesPerField / 50);
    if (spec.type == FieldType::kJson || spec.type == FieldType::kText) {
      EXPECT_GT(refusals_compared, 10);
    }

    std::size_t compared = 0;
    for (const auto& row : txn.exec("SELECT id, " + read_back(spec, "original") + ", " +
                                    read_back(spec, "canonical") + " FROM " + table)) {
      const auto& [source, canonical] = expected.at(row[0].as<int>());
      EXPECT_EQ(row[1].c_str(), canonical) << "source " << escape_bytes(source);
      EXPECT_EQ(row[2].c_str(), canonical) << "source " << escape_bytes(source);
      ++compared;
    }
    EXPECT_EQ(compared, expected.size());
  }
}

}  // namespace
}  // namespace tidemark::pipeline
