#include "pipeline/core/record.hpp"


namespace tidemark::pipeline {

namespace {
constexpr std::array<std::string_view, kOutcomeCount> kOutcomeNames = {
    "inserted", "updated", "unchanged", "stale", "superseded", "duplicate", "invalid", "conflict"};
}  // namespace

std::string SourcePosition::describe() const {
  return file + ":" + std::to_string(line) + " (byte " + std::to_string(offset) + ")";
}

std::optional<std::size_t> RecordLayout::index(std::string_view name) const {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  return std::nullopt;
}

const std::optional<Field>& DecodedRecord::field(std::size_t index) const {
  static const std::optional<Field> kAbsent;
  return index < fields.size() ? fields[index] : kAbsent;
}

std::optional<Field>& DecodedRecord::field(std::size_t index) {
  if (index >= fields.size()) fields.resize(index + 1);
  return fields[index];
}

void DecodedRecord::release_fields() {
  std::vector<std::optional<Field>>().swap(fields);
  std::vector<std::pair<std::string, Field>>().swap(undeclared);
}

std::string_view to_string(Outcome outcome) { return kOutcomeNames[static_cast<std::size_t>(outcome)]; }

std::optional<Outcome> outcome_from_string(std::string_view text) {
  for (Outcome o : kAllOutcomes) {
    if (to_string(o) == text) return o;
  }
  return std::nullopt;
}

std::uint64_t OutcomeCounts::input() const {
  std::uint64_t total = 0;
  for (std::uint64_t n : by_outcome) total += n;
  return total;
}

OutcomeCounts& OutcomeCounts::operator+=(const OutcomeCounts& other) {
  for (std::size_t i = 0; i < kOutcomeCount; ++i) by_outcome[i] += other.by_outcome[i];
  return *this;
}

}  // namespace tidemark::pipeline
