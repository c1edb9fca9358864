#pragma once
// The built-in `transaction` entity's records as typed values, for tests that assert on an
// amount or an instant rather than on canonical text. The pipeline itself only ever has
// EntityRecords from RecordChecker; `validate` here is that checker with the built-in
// declaration, its canonical values read back into types.
// Header-only: unit_tests and the fuzz targets do not link tidemark_test_support.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "pipeline/core/entity.hpp"
#include "pipeline/core/record.hpp"
#include "pipeline/core/validate.hpp"

namespace tidemark::pipeline {

// The built-in entity's fields by their index in its record_layout.
namespace built_in_field {
inline constexpr std::size_t kTransactionId = kKeyField;
inline constexpr std::size_t kSourceRevision = kRevisionField;
inline constexpr std::size_t kAmount = 2;
inline constexpr std::size_t kAccountId = 3;
inline constexpr std::size_t kOccurredAt = 4;
}  // namespace built_in_field

// An exact amount of numeric(12,2): hundredths as an integer, so 130.0 == 130.00.
struct Amount {
  std::int64_t cents = 0;
  // Canonical text: "-130.05", "0.00"; on the magnitude as unsigned, so the most negative
  // value cannot overflow.
  std::string to_string() const {
    const bool negative = cents < 0;
    const std::uint64_t magnitude =
        negative ? std::uint64_t{0} - static_cast<std::uint64_t>(cents) : static_cast<std::uint64_t>(cents);
    char text[32];
    const int length = std::snprintf(text, sizeof text, "%s%llu.%02llu", negative ? "-" : "",
                                     static_cast<unsigned long long>(magnitude / 100),
                                     static_cast<unsigned long long>(magnitude % 100));
    return std::string(text, static_cast<std::size_t>(length));
  }
  friend bool operator==(const Amount&, const Amount&) = default;
};

// A valid built-in record, typed.
struct Record {
  std::string transaction_id;
  std::int64_t source_revision = 0;
  Amount amount;
  std::optional<std::string> account_id;
  std::optional<std::int64_t> occurred_at_us;  // UTC microseconds since the Unix epoch

  // The key that orders delivery: the account, or the transaction when it has none.
  const std::string& partition_key() const { return account_id ? *account_id : transaction_id; }
  bool same_payload(const Record& other) const {
    return amount == other.amount && account_id == other.account_id && occurred_at_us == other.occurred_at_us;
  }
};

using Validated = std::variant<Record, Rejection>;

// numeric(12,2)'s rules (parse_decimal), as hundredths.
inline std::variant<Amount, Rejection> parse_amount(std::string_view text) {
  auto decimal = parse_decimal(text, 12, 2);
  if (auto* rejection = std::get_if<Rejection>(&decimal)) return std::move(*rejection);
  std::int64_t cents = 0;
  for (char c : std::get<std::string>(decimal)) {
    if (c >= '0' && c <= '9') cents = cents * 10 + (c - '0');
  }
  return Amount{std::get<std::string>(decimal).front() == '-' ? -cents : cents};
}

// The record as the pipeline checks it (RecordChecker, built-in declaration), typed.
inline Validated validate(const DecodedRecord& decoded) {
  static const RecordChecker checker(built_in_transaction_entity());
  Checked checked = checker.check(decoded);
  if (auto* rejection = std::get_if<Rejection>(&checked)) return std::move(*rejection);
  const auto& entity = std::get<EntityRecord>(checked);
  Record record{entity.key, entity.revision, std::get<Amount>(parse_amount(*entity.values[0])), entity.values[1],
                std::nullopt};
  if (entity.values[2]) record.occurred_at_us = std::get<std::int64_t>(parse_timestamp(*entity.values[2]));
  return record;
}

// The typed record as the planner and the commit take it.
inline EntityRecord to_entity_record(const Record& record) {
  EntityRecord entity{record.transaction_id, record.source_revision, {}, std::nullopt};
  entity.values.emplace_back(record.amount.to_string());
  entity.values.push_back(record.account_id);
  entity.values.push_back(record.occurred_at_us ? std::optional<std::string>(format_timestamp(*record.occurred_at_us))
                                                : std::nullopt);
  return entity;
}

}  // namespace tidemark::pipeline
