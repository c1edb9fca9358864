#pragma once
// An entity's table brought up to its declaration (docs/entities.md
// "Schema changes", "Adopting an existing table"): created when missing, extended with a
// nullable column per new field, adopted when it exists and matches; recorded in
// tidemark_entities. Never a change that could lose or reinterpret a stored value.
#include <stdexcept>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "pipeline/core/entity.hpp"
#include "pipeline/core/error.hpp"

namespace tidemark::pipeline::db {

// The table cannot hold the declaration: a column of another type, precision or scale, a
// foreign table that does not match, a table another entity has. A configuration error
// (exit 2); the message names the table, the column, what it is and what the config says:
// "table orders, column amount: is numeric(12,2), the config says decimal(14,4)".
struct EntitySchemaError : tidemark::Error {
  explicit EntitySchemaError(const std::string& message) : tidemark::Error(tidemark::ErrorKind::kConflict, message) {}
};

struct EntityTableChanges {
  bool created = false;  // the table did not exist
  bool adopted = false;  // it existed, Tidemark had not recorded it, and it matched
  std::vector<std::string> added_columns;  // new fields' columns, bookkeeping columns on adoption
  // Columns the declaration does not name (a removed field's, or the user's own on an
  // adopted table): left as they are, for the caller to log.
  std::vector<std::string> unused_columns;
};

// Creates or brings entity `entity`'s table up to date and records the declaration, in one
// transaction under the migration lock: two processes at once serialize, the second finds
// the table done. `entity` is checked (check_declared_entity). EntitySchemaError when the
// table cannot hold it; then nothing is changed.
EntityTableChanges ensure_entity_table(pqxx::connection& connection, const EntityDeclaration& entity);

// What ensure_entity_table would find, read-only (`tidemark check`): the same comparison,
// with every problem rather than the first, and nothing created, altered or recorded.
struct EntityTableCheck {
  bool exists = false;  // false: ensure_entity_table will create the table
  std::vector<std::string> problems;  // each as EntitySchemaError would say it
  std::vector<std::string> added_columns;  // the columns ensure_entity_table will add
};
EntityTableCheck check_entity_table(pqxx::connection& connection, const EntityDeclaration& entity);

}  // namespace tidemark::pipeline::db
