#pragma once
// What every decoded stream must satisfy, whatever the bytes: positions inside the input
// and in order, and every record — decodable or not — turned into a value by validate()
// (an invalid record is a Rejection, never a crash or an exception).
#include <cstdlib>
#include <string_view>
#include <vector>

#include "pipeline/core/record.hpp"
#include "pipeline/core/validate.hpp"
#include "tests/support/built_in_record.hpp"

namespace tidemark::fuzz {

inline void check_decoded(std::string_view input, const std::vector<pipeline::DecodedRecord>& records) {
  std::uint64_t previous_end = 0;
  for (const auto& record : records) {
    const auto& position = record.position;
    if (position.offset < previous_end || position.end_offset < position.offset || position.end_offset > input.size()) {
      std::abort();
    }
    const pipeline::Validated validated = pipeline::validate(record);
    if (record.decode_error && !std::holds_alternative<pipeline::Rejection>(validated)) std::abort();
    previous_end = position.end_offset;
  }
}

}  // namespace tidemark::fuzz
