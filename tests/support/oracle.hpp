#pragma once
// An independent model of what one clean run leaves behind, written from docs/rules.md and
// the public contract (docs/cli.md "Outcomes") only: it shares no code with pipeline/ or
// connectors/ (its own CSV reader, its own decimal and timestamp handling), so a bug in the
// pipeline cannot hide in both.
// The crash tests compare the database after crashes and restarts with its prediction.
// It models any entity from its declaration (docs/entities.md): the built-in `transaction`
// and a declared one with every field type are two EntitySpecs of one model.
#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tidemark::testing::oracle {

struct SourceFile {
  std::string name;     // inside the source folder
  std::string content;  // the bytes written
};

// One declared field: docs/entities.md "Field types".
struct FieldSpec {
  std::string name;
  std::string type;  // text, integer, decimal, timestamp, date, boolean, json
  int precision = 0;
  int scale = 0;
  bool required = false;
  std::size_t max_length = 1024;  // text only
};

struct EntitySpec {
  std::string name;
  std::string table;
  std::string key;
  std::string revision;
  std::string partition_by;  // a field's name, or the key
  std::vector<FieldSpec> fields;
  // The built-in entity's legacy envelope: idempotency keys <destination>:<key>:<revision>
  // (no entity), the table's `pipeline` column, undeclared columns ignored (a declared
  // entity here rejects them: extra_fields: reject).
  bool legacy = false;
};

// The built-in entity as docs/entities.md "Decisions" declares it.
const EntitySpec& transaction_entity();
// A declared entity with every field type, partitioned by a text field.
const EntitySpec& every_type_entity();
// The `entities:` block that declares `entity` (empty for the built-in one).
std::string declaration_yaml(const EntitySpec& entity);
// JSON texts the oracle knows the jsonb form of (it has no JSON parser of its own); any other
// text in a json field is taken as invalid.
const std::vector<std::string>& json_spellings();

struct StateRow {
  std::int64_t revision = 0;
  // Each field's canonical form in declaration order (docs/entities.md), nullopt for absent;
  // a timestamp as UTC microseconds since the epoch.
  std::vector<std::optional<std::string>> fields;
  friend auto operator<=>(const StateRow&, const StateRow&) = default;
};

struct QuarantineEntry {
  std::string reason;    // "invalid" or "conflict"
  std::string position;  // "file:line N (byte B)"
  std::string raw;       // the exact bytes received, without the line terminator
  std::string entity;
  std::string field;     // the field at fault of an invalid record; "" for none
  friend auto operator<=>(const QuarantineEntry&, const QuarantineEntry&) = default;
};

// The eight outcome counts, in the order of docs/cli.md "Outcomes".
inline constexpr std::array<std::string_view, 8> kOutcomes = {
    "inserted", "updated", "unchanged", "stale", "superseded", "duplicate", "invalid", "conflict"};
using Totals = std::array<std::uint64_t, 8>;

// What the database holds for one pipeline: predicted by expect(), read by observe().
struct Outcome {
  std::vector<std::pair<std::string, StateRow>> state;  // by key
  std::vector<std::string> outbox_keys;                  // sorted; a duplicate appears twice
  // "<destination> <partition>" -> its outbox sequences, "1..n" when gapless from 1.
  std::map<std::string, std::string> sequences;
  std::vector<QuarantineEntry> quarantine;               // sorted
  Totals totals{};                                       // summed over the batch ledger
  std::string checkpoint;                                // "file:offset", "" for none
};

// The outcome of one clean run of the CSV `files` (ignoring names without the .csv
// extension, read in lexical order) loading `entity` in batches of `batch_size` records, with
// one outbox row per accepted change for each of `destinations`.
Outcome expect(const EntitySpec& entity, std::vector<SourceFile> files, std::size_t batch_size,
               const std::vector<std::string>& destinations);

// The records of the CSV `files` (read as expect() reads them) that are well formed, with as
// many fields as their header, by column name, in reading order: for loading the same
// records through another source (the postgres source's crash tests).
std::vector<std::map<std::string, std::string>> well_formed_records(std::vector<SourceFile> files);

// Reads the tables of `pipeline`, which loads `entity`, from the database at `url`.
Outcome observe(const std::string& url, const std::string& pipeline, const EntitySpec& entity);

// Differences between expected and actual, one per line; "" when they agree.
std::string compare(const Outcome& expected, const Outcome& actual);

// Measures for the figures in docs/guarantees.md.
struct Tally {
  std::uint64_t lost_corrections = 0;   // keys missing or behind their expected revision
  std::uint64_t duplicate_effects = 0;  // outbox rows beyond one per idempotency key
};
Tally tally(const Outcome& expected, const Outcome& actual);

// RFC 4180 field text: quoted when it holds a comma, quote, CR or LF.
std::string csv_field(std::string_view value);

}  // namespace tidemark::testing::oracle
