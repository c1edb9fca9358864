#pragma once
// The SQL of one declared entity (docs/entities.md "The table"):
// its table, its stage and the one statement that applies a batch, filled in once from the
// declaration into the templates sql/entity/{create_table,create_stage,apply_batch}.sql.
// Every identifier is quoted and comes from the declaration, never from a record: record
// values only ever travel as COPY data and parameters.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pipeline/core/entity.hpp"
#include "pipeline/core/field_type.hpp"

namespace tidemark::pipeline::db {

// `name` as a PostgreSQL quoted identifier: "name", with any `"` doubled.
std::string quote_identifier(std::string_view name);
// `text` as a PostgreSQL string literal: 'text', with any `'` doubled.
std::string quote_literal(std::string_view text);

// A template's placeholders ({{name}}) and their values; a later entry wins.
using Placeholders = std::vector<std::pair<std::string_view, std::string>>;
// `text` (a statement of sql/ with placeholders) with each {{name}} replaced by its value, in
// one pass (a value is never scanned again). A placeholder without a value is a bug in the
// caller, caught by every test (std::logic_error).
std::string fill(std::string_view text, const Placeholders& values);

// The column type a field of `spec`'s type is stored in, as format_type spells it:
// text, bigint, numeric(p,s), timestamp with time zone, date, boolean, jsonb.
std::string column_type(const FieldSpec& spec);
// The field's type as the config spells it, for messages: text, integer, decimal(14,4), ...
std::string config_type(const FieldSpec& spec);

// The built-in entity takes its legacy envelope (uses_legacy_envelope): its table's
// bookkeeping columns, idempotency keys and payloads; its table is the migrations', so its
// create_table is never run.
struct EntitySql {
  // CREATE TABLE for the entity's table: key text PRIMARY KEY, revision bigint NOT NULL, one
  // nullable column per field, `extra jsonb` when kept, the two bookkeeping columns.
  std::string create_table;
  // The per-connection TEMP stage the commit COPYs a batch's versions into (emptied at
  // commit), and its name (unquoted): tidemark_stage_<entity>.
  std::string create_stage;
  std::string stage_table;
  // The stage's columns in COPY order: tidemark_ord (the version's index in the batch
  // plan), the key, the revision, each field in declaration order, `extra` when kept,
  // tidemark_candidate (the highest revision of its key in the batch). Values in the text
  // format of each column's type; \N for absent.
  std::vector<std::string> stage_columns;
  // The batch's one write (sql/entity/apply_batch.sql): $1 the pipeline, $2 the destinations
  // as a text[] literal; returns (ord, verdict, changes_logged: the batch's changes written to
  // the change log, once each whatever the destinations, then per value column the stored
  // row's value in canonical form when the verdict is conflict, else NULL) for every
  // conflicting or candidate version.
  std::string apply_batch;
};

// Built once per entity; `entity` is checked (check_entity) already.
EntitySql build_entity_sql(const EntityDeclaration& entity);

// The columns an entity's table holds besides the key and the revision, in table order:
// each field's, then `extra` when kept. Shared by the DDL, the schema check and the stage.
struct EntityColumn {
  std::string name;
  std::string type;         // as column_type
  std::string config_type;  // as config_type; "json" for `extra`
};
std::vector<EntityColumn> value_columns(const EntityDeclaration& entity);

// A value column of a table against the type its declaration asks for (docs/entities.md
// "Schema changes"): whether every value the column can hold is kept as it is by the other
// type, and the statement that changes it (sql/entity/alter_column_type.sql).
struct ColumnChange {
  // It loses nothing: a declared entity's own table is changed by the next run. Only more
  // digits at the same or a larger scale (numeric(8,3) -> numeric(10,3), numeric(8,3) ->
  // numeric(10,4)), an integer into a decimal with as many digits before the point
  // (bigint -> numeric(19,0)), a whole decimal of up to 18 digits or a smaller integer into
  // bigint, and varchar into text.
  bool automatic = false;
  std::string statement;  // ALTER TABLE ... ALTER COLUMN ... TYPE ...: Tidemark's, or one to run by hand
  std::string reason;     // why it loses nothing, or what it could lose or reinterpret
};
// What changing column `declared.name` of `table` from `is` (format_type's spelling) to
// `declared.type` means; nullopt when it is that type already.
std::optional<ColumnChange> column_change(const std::string& table, const EntityColumn& declared,
                                          const std::string& is);

// The declaration as tidemark_entities.definition records it (a JSON object).
std::string definition_json(const EntityDeclaration& entity);

}  // namespace tidemark::pipeline::db
