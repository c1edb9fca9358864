#pragma once
// The input contract (docs/cli.md "Input records") as a pure function: no I/O, no clock, no logging.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "pipeline/core/entity.hpp"
#include "pipeline/core/field_value.hpp"
#include "pipeline/core/record.hpp"

namespace tidemark::pipeline {

// What the pipeline carries from validation to commit, for every entity.
using Checked = std::variant<EntityRecord, Rejection>;

// The fields a decoder delivers for `entity`: the key, the revision, then every declared
// field; undeclared ones too unless extra_fields is ignore.
RecordLayout record_layout(const EntityDeclaration& entity);

// An entity's validation, compiled once from its declaration: decoded records (by
// record_layout) to canonical EntityRecords, or the rule one breaks with the field at fault.
// Generic over the declaration: the built-in entity is one more declaration.
class RecordChecker {
 public:
  explicit RecordChecker(const EntityDeclaration& entity);

  const EntityDeclaration& entity() const { return entity_; }
  const RecordLayout& layout() const { return layout_; }
  Checked check(const DecodedRecord& decoded) const;

 private:
  // The undeclared fields under extra_fields keep or reject: the `extra` object, or the rejection.
  std::variant<std::optional<std::string>, Rejection> check_undeclared(const DecodedRecord& decoded) const;

  EntityDeclaration entity_;
  RecordLayout layout_;
  FieldPlan fields_;
  FieldValidator extra_value_;  // one undeclared value as JSON, for `extra`
};

// The record's revision (field kRevisionField, of any entity) when that field itself is
// valid, whatever else is wrong with the record: an invalid record still shows it, for
// searching. nullopt when it is missing or invalid, or the record could not be decoded.
std::optional<std::int64_t> valid_revision(const DecodedRecord& decoded);

// How two records of one key and revision differ, for a conflict's detail: each declared
// field (and `extra`) whose canonical values differ, with both values quoted (absent when
// absent), as `field "here's" here, "other's" <there>`, joined by "; ".
std::string describe_differences(const EntityDeclaration& entity, const EntityRecord& here,
                                 const EntityRecord& other, std::string_view there);

// What is wrong with `text` as text a column stores, if anything: invalid UTF-8, a control
// character (C0, DEL, C1), a byte order mark at its start (kMisplacedBom) or more than
// `max_characters` code points. Empty is fine here.
std::optional<std::string> text_problem(std::string_view text, std::size_t max_characters);

// A bigint: decimal digits only, with an optional leading '-' when `allow_minus`; no '+',
// spaces, point or exponent. -9223372036854775808 ... 9223372036854775807.
std::variant<std::int64_t, Rejection> parse_integer(std::string_view text, bool allow_minus);

// Exact decimal parsing for numeric(precision, scale): optional sign, at most
// precision - scale integer and scale fraction digits, no exponent, NaN or Infinity, never
// rounded and never through a double. The result is numeric's own text for the value:
// "-130.05", "2.2500" (scale 4), "0.00" (no sign on zero), "7" (scale 0).
std::variant<std::string, Rejection> parse_decimal(std::string_view text, int precision, int scale);

// The instants a timestamp field holds, in UTC microseconds since the epoch:
// 0001-01-01T00:00:00Z ... 9999-12-31T23:59:59.999999Z.
inline constexpr std::int64_t kMinTimestampMicros = -62'135'596'800LL * 1'000'000;
inline constexpr std::int64_t kMaxTimestampMicros = 253'402'300'800LL * 1'000'000 - 1;

// RFC 3339 timestamp with an offset ("2024-05-01T10:00:00+02:00", "...Z", up to 6
// fraction digits, no leap second) to UTC microseconds since the epoch, within
// kMinTimestampMicros ... kMaxTimestampMicros once the offset is applied.
std::variant<std::int64_t, Rejection> parse_timestamp(std::string_view text);

// A calendar date "YYYY-MM-DD" of years 0001-9999 to days since 1970-01-01.
std::variant<std::int64_t, Rejection> parse_date(std::string_view text);

// Inverse of parse_timestamp for canonical output: "2024-05-01T08:00:00.000000Z".
std::string format_timestamp(std::int64_t utc_micros);

}  // namespace tidemark::pipeline
