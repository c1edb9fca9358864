#pragma once
// The values that flow through the pure core: decode -> validate -> plan.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tidemark::pipeline {

// How a field's value was written in the source. JSON distinguishes strings from numbers and
// booleans so the validator can name a type mistake. A format without types (a delimited text
// line) may give kUntyped: its text may then be read as any type (`true` as a boolean,
// `{"a": 1}` as a json object), where a JSON string is only ever a string.
enum class FieldKind {
  kString,
  kNumber,   // text: the number's exact source text
  kOther,    // a JSON boolean, object or array that the decoder does not tell apart
  kBoolean,  // a JSON boolean: text "true" or "false"
  kJson,     // a JSON object or array: text is its exact source text
  kUntyped,  // text of a format without types; empty means absent
};

// Whether the value was written as text (a JSON string, or untyped text).
inline constexpr bool is_text_kind(FieldKind kind) {
  return kind == FieldKind::kString || kind == FieldKind::kUntyped;
}

struct Field {
  std::string text;  // for kNumber: the number's exact source text, never a double
  FieldKind kind = FieldKind::kString;
};

// Where a record came from, precise enough to resume after it and to find it by hand.
struct SourcePosition {
  std::string file;          // file name relative to the source (the file itself for a single file)
  std::uint64_t line = 0;    // 1-based line on which the record starts
  std::uint64_t offset = 0;  // byte offset of the record's first byte
  std::uint64_t end_offset = 0;  // byte offset just past the record (where a resume starts)

  std::string describe() const;  // "file:line N (byte B)"
};

// Which fields a decoder delivers, decided once per decoder from the entity it loads
// (pipeline/core/validate.hpp record_layout): by name, each at its index in
// DecodedRecord::fields. Index 0 is the key, 1 the revision, then the declared fields in
// declaration order.
struct RecordLayout {
  std::vector<std::string> names;
  // Per name: whether a delimited source without that column is unusable (the key, the
  // revision and required fields); the others may be left out, which is absent.
  std::vector<bool> required;
  // Whether the fields the layout does not name are delivered too (extra_fields keep or reject).
  bool undeclared = false;

  // The index of `name`, or nullopt for a field the layout does not name.
  std::optional<std::size_t> index(std::string_view name) const;
};

inline constexpr std::size_t kKeyField = 0;
inline constexpr std::size_t kRevisionField = 1;

// One record as the decoder saw it. Absent fields are nullopt (JSON null counts as absent).
struct DecodedRecord {
  std::string raw;  // the record's text as received, without the line terminator
  SourcePosition position;
  std::optional<std::string> decode_error;  // set when the text could not be decoded
  // What the source's decoder needed besides `raw` to decode it (the source's header line,
  // say); stored with a quarantined record so that a RecordDecoder can decode it again. Null
  // when nothing. Shared by the records it belongs to: a reference count, not a copy.
  std::shared_ptr<const std::string> decode_context;
  // By RecordLayout index; shorter than the layout when the last ones are absent.
  std::vector<std::optional<Field>> fields;
  // The fields the layout does not name, in source order, when it asks for them; absent
  // ones (JSON null, an empty delimited field) are left out.
  std::vector<std::pair<std::string, Field>> undeclared;

  // The field at `index` of the layout: nullopt when absent.
  const std::optional<Field>& field(std::size_t index) const;
  std::optional<Field>& field(std::size_t index);  // grows `fields` to reach it
  // Frees `fields` and `undeclared`, their buffers included, once a record's canonical form
  // stands for them. (Assigning `{}` would keep the buffers: vector's initializer-list
  // assignment keeps its capacity, 48 bytes per layout field of every record in a batch.)
  void release_fields();
};

// Why a record is rejected; an expected data problem, so a value, never an exception.
struct Rejection {
  std::string detail;  // names the field and the rule, e.g. "amount: more than 2 fraction digits"
  std::optional<std::string> field = std::nullopt;  // the field at fault, when one is
};

// A record of any entity that satisfies its declaration, in canonical form: what the planner
// compares and the commit stages.
struct EntityRecord {
  std::string key;
  std::int64_t revision = 0;
  // Per declared field, in declaration order: its canonical form (field_value.hpp), nullopt
  // when absent.
  std::vector<std::optional<std::string>> values;
  // extra_fields keep: the undeclared fields as a canonical jsonb object, nullopt when none.
  std::optional<std::string> extra;

  // The payload compared for same-revision conflicts: every declared field and `extra`.
  bool same_payload(const EntityRecord& other) const { return values == other.values && extra == other.extra; }
};

enum class Outcome : std::uint8_t {
  kInserted,
  kUpdated,
  kUnchanged,
  kStale,
  kSuperseded,
  kDuplicate,
  kInvalid,
  kConflict,
};
inline constexpr std::size_t kOutcomeCount = 8;
inline constexpr std::array<Outcome, kOutcomeCount> kAllOutcomes = {
    Outcome::kInserted,   Outcome::kUpdated,   Outcome::kUnchanged, Outcome::kStale,
    Outcome::kSuperseded, Outcome::kDuplicate, Outcome::kInvalid,   Outcome::kConflict};

std::string_view to_string(Outcome outcome);
std::optional<Outcome> outcome_from_string(std::string_view text);

// Counts of each outcome; input always equals their sum.
struct OutcomeCounts {
  std::array<std::uint64_t, kOutcomeCount> by_outcome{};
  std::uint64_t& operator[](Outcome o) { return by_outcome[static_cast<std::size_t>(o)]; }
  std::uint64_t operator[](Outcome o) const { return by_outcome[static_cast<std::size_t>(o)]; }
  std::uint64_t input() const;
  OutcomeCounts& operator+=(const OutcomeCounts& other);
};

}  // namespace tidemark::pipeline
