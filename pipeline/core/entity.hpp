#pragma once
// An entity's declaration (docs/entities.md): the keyed, revisioned
// record a pipeline loads, its table and its typed fields, and the rules a declaration must
// keep. Pure: the config parser builds declarations and checks them here; the field plan,
// the SQL generator and the runtime take them as checked.
#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pipeline/core/field_type.hpp"

namespace tidemark::pipeline {

// What a record's undeclared fields do (`extra_fields:`).
enum class ExtraFields : unsigned char {
  kIgnore,  // dropped
  kReject,  // a record with any non-empty undeclared field is invalid
  kKeep,    // stored in the jsonb column `extra` and compared with the declared fields
};

// Each mode with its name in the config and in tidemark_entities.definition.
inline constexpr std::array<std::pair<std::string_view, ExtraFields>, 3> kExtraFieldsModes = {{
    {"ignore", ExtraFields::kIgnore},
    {"reject", ExtraFields::kReject},
    {"keep", ExtraFields::kKeep},
}};

inline constexpr std::string_view to_string(ExtraFields mode) {
  for (const auto& [name, listed] : kExtraFieldsModes) {
    if (listed == mode) return name;
  }
  return "unknown";  // only a value cast from outside the enumerators
}

inline constexpr std::optional<ExtraFields> extra_fields_from_string(std::string_view name) {
  for (const auto& [listed, mode] : kExtraFieldsModes) {
    if (listed == name) return mode;
  }
  return std::nullopt;
}

// The entity a pipeline loads when it names none; no declaration may take its name.
inline constexpr std::string_view kBuiltInEntityName = "transaction";
// The columns Tidemark adds to every entity table, and the one `extra_fields: keep` adds.
inline constexpr std::string_view kPipelineColumn = "tidemark_pipeline";
inline constexpr std::string_view kUpdatedAtColumn = "tidemark_updated_at";
inline constexpr std::string_view kExtraColumn = "extra";

struct EntityDeclaration {
  std::string name;      // [a-z][a-z0-9_]{0,47}
  std::string table;     // the name when the config gives none
  std::string key;       // the business key field: text, 1-128 characters
  std::string revision;  // the revision field: integer 0 ... 2^63-1
  // The field whose value orders delivery and numbers sequences: a text or integer field,
  // or the key (the default). A record whose partition field is absent takes its key as the
  // partition (outbox rows always have one), as the built-in entity's account_id always has.
  std::string partition_by;
  ExtraFields extra_fields = ExtraFields::kIgnore;
  std::vector<FieldSpec> fields;  // in declaration order: the table's and the payload's order
  // Where the config file says it, for messages (0: not from a file): the lines of the
  // entity's name and of its key:, revision: and extra_fields: (the name's when left out).
  struct Lines {
    int name = 0;
    int key = 0;
    int revision = 0;
    int extra_fields = 0;
    friend bool operator==(const Lines&, const Lines&) = default;
  } lines;

  // The declared field `name` (not the key or the revision); nullptr when none is.
  const FieldSpec* field(std::string_view name) const;

  friend bool operator==(const EntityDeclaration&, const EntityDeclaration&) = default;
};

// The `transaction` entity as a fixed declaration: transaction_state's columns, partitioned
// by account_id with the transaction id as fallback (the legacy envelope's rule).
const EntityDeclaration& built_in_transaction_entity();

// Whether `entity` is the built-in one, whose table, idempotency keys and payloads keep the
// legacy envelope (docs/entities.md): transaction_state made by the migrations, with
// bookkeeping columns `pipeline` and `updated_at`, keys <destination>:<key>:<revision>, and a
// flat payload. No declaration can be (check_declared_entity refuses its name).
inline bool uses_legacy_envelope(const EntityDeclaration& entity) { return entity.name == kBuiltInEntityName; }

// Each check returns what is wrong, for a message that names the value; nullopt when it holds.

// 'name': how the declarations' messages quote a name.
std::string quoted_name(std::string_view name);
// Whether `table` is `prefix`, digits, `suffix` (account_balance_v3, daily_totals_v2_transactions):
// a version's table of a view.
bool is_version_table(std::string_view table, std::string_view prefix, std::string_view suffix = "");

// An entity name: [a-z][a-z0-9_]{0,47}.
std::optional<std::string> check_entity_name(std::string_view name);
// The same rule for another name built into table names (a view's); `what` names it in the
// message ("view name").
std::optional<std::string> check_plain_name(std::string_view what, std::string_view name);
// A table or column name: [a-z][a-z0-9_]{0,62}, not starting with tidemark_. `what` names it
// in the message ("field name", "table name", ...).
std::optional<std::string> check_identifier(std::string_view what, std::string_view name);
// A table a declared entity may use: an identifier no Tidemark table has or will have.
std::optional<std::string> check_table_name(std::string_view table);
// Every table Tidemark's migrations create, the views' version tables (account_balance_v<n>,
// daily_totals_v<n>) and anything tidemark_* (the prefix of every table added from now on).
bool is_reserved_table_name(std::string_view table);

// Which part of a declaration a DeclarationError is about, so the config can point at its line.
enum class DeclarationPart : unsigned char {
  kName,
  kTable,
  kKey,
  kRevision,
  kPartitionBy,
  kFieldName,
  kFieldMaxLength,
  kFieldPrecision,
  kFieldScale,
};

struct DeclarationError {
  DeclarationPart part = DeclarationPart::kName;
  std::string field;  // the declared field at fault, for the kField* parts
  std::string message;

  friend bool operator==(const DeclarationError&, const DeclarationError&) = default;
};

// The rules every entity keeps, the built-in one included: names, distinct columns (key,
// revision, fields, `extra` when kept, no bookkeeping column), each field's type rules
// (text: max_length >= 1; decimal: precision 1 ... kMaxDecimalPrecision, 0 <= scale <=
// precision; others: no precision or scale), partition_by naming the key or a text or
// integer field. The first error in declaration order.
std::optional<DeclarationError> check_entity(const EntityDeclaration& entity);
// check_entity plus what only the built-in entity may do: take the name `transaction`, a
// reserved table, or the legacy envelope's partition fallback.
std::optional<DeclarationError> check_declared_entity(const EntityDeclaration& entity);

// Two entities may not share a table: the message names the entity of `declared` that
// already has `entity`'s table.
std::optional<std::string> check_table_unused(const std::map<std::string, EntityDeclaration>& declared,
                                              const EntityDeclaration& entity);

}  // namespace tidemark::pipeline
