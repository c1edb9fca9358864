#pragma once
// The input contract of INTERFACE.md as a pure function: no I/O, no clock, no logging.
#include <string_view>
#include <variant>

#include "pipeline/core/record.hpp"

namespace tidemark::pipeline {

using Validated = std::variant<Record, Rejection>;

// Turns a decoded record into a canonical Record, or says which field breaks which rule.
// A record with a decode_error is rejected with that error as its detail.
Validated validate(const DecodedRecord& decoded);

// Exact decimal parsing for numeric(12,2): optional sign, at most 10 integer and 2 fraction
// digits, no exponent, NaN or Infinity. Never goes through a double.
std::variant<Amount, Rejection> parse_amount(std::string_view text);

// RFC 3339 timestamp with an offset ("2024-05-01T10:00:00+02:00", "...Z", up to 6
// fraction digits) to UTC microseconds since the epoch.
std::variant<std::int64_t, Rejection> parse_timestamp(std::string_view text);

// Inverse of parse_timestamp for canonical output: "2024-05-01T08:00:00.000000Z".
std::string format_timestamp(std::int64_t utc_micros);

}  // namespace tidemark::pipeline
