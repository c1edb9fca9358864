#pragma once
// The five fields of the input contract, by the name both formats use for them.
#include <array>
#include <optional>
#include <string_view>

#include "pipeline/core/record.hpp"

namespace tidemark::connectors::file {

struct RecordField {
  std::string_view name;
  std::optional<pipeline::Field> pipeline::DecodedRecord::*member;
  bool optional;  // INTERFACE.md: an empty optional field means absent
};

inline constexpr std::array<RecordField, 5> kRecordFields = {{
    {"transaction_id", &pipeline::DecodedRecord::transaction_id, false},
    {"source_revision", &pipeline::DecodedRecord::source_revision, false},
    {"amount", &pipeline::DecodedRecord::amount, false},
    {"account_id", &pipeline::DecodedRecord::account_id, true},
    {"occurred_at", &pipeline::DecodedRecord::occurred_at, true},
}};

// The index of `name` in kRecordFields, or nullopt for a field the contract ignores.
inline std::optional<std::size_t> record_field_index(std::string_view name) {
  for (std::size_t i = 0; i < kRecordFields.size(); ++i) {
    if (kRecordFields[i].name == name) return i;
  }
  return std::nullopt;
}

}  // namespace tidemark::connectors::file
