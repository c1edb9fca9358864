#pragma once
// An entity's table brought up to its declaration (docs/entities.md
// "Schema changes", "Adopting an existing table"): created when missing, extended with a
// nullable column per new field, a column widened where that keeps every stored value as it
// is, adopted when it exists and matches; recorded in tidemark_entities. Never a change that
// could lose or reinterpret a stored value.
#include <stdexcept>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "pipeline/core/entity.hpp"
#include "pipeline/core/error.hpp"

namespace tidemark::pipeline::db {

// The table cannot hold the declaration: a column of another type, precision or scale that
// Tidemark does not change (one that would lose or reinterpret a stored value), a foreign
// table that does not match, a table another entity has. A configuration error (exit 2); the
// message has one line per problem, each naming the table, the column, what it is and what
// the config says, and for a type the statement to change it by hand and why Tidemark will not:
// "table orders, column amount: is numeric(14,4), the config says decimal(14,2); Tidemark will
// not change it: fewer digits after the point (2, was 4): ...; to change it by hand: ALTER TABLE ...".
struct EntitySchemaError : tidemark::Error {
  explicit EntitySchemaError(const std::string& message) : tidemark::Error(tidemark::ErrorKind::kConflict, message) {}
};

// One way a table cannot hold its declaration.
struct SchemaProblem {
  std::string column;   // the column it is about; empty when it is about the table
  std::string message;  // one line, as EntitySchemaError says it
};
// Every problem in one error, one line each: the key, the revision, the fields in declared
// order, then the rest.
EntitySchemaError schema_error(const std::vector<SchemaProblem>& problems);

// A column changed to the type its declaration asks for, because that loses nothing
// (column_change in entity_sql.hpp says which changes do).
struct ColumnAlteration {
  std::string column;
  std::string from;       // the type it was, as format_type spells it
  std::string to;         // the type it is now
  std::string statement;  // the ALTER TABLE run
  std::string reason;     // why it loses nothing
};

struct EntityTableChanges {
  bool created = false;  // the table did not exist
  bool adopted = false;  // it existed, Tidemark had not recorded it, and it matched
  std::vector<std::string> added_columns;  // new fields' columns, bookkeeping columns on adoption
  // Declared fields' columns widened to their declared type (a table Tidemark created or
  // adopted before only; a table being adopted is taken as it is). Each is logged at info.
  std::vector<ColumnAlteration> altered_columns;
  // Columns the declaration does not name (a removed field's, or the user's own on an
  // adopted table): left as they are, for the caller to log.
  std::vector<std::string> unused_columns;
};

// Creates or brings entity `entity`'s table up to date and records the declaration, in one
// transaction under the migration lock: two processes at once serialize, the second finds
// the table done (altered, or created). `entity` is checked (check_declared_entity).
// EntitySchemaError, naming every problem, when the table cannot hold it; then nothing is
// changed.
EntityTableChanges ensure_entity_table(pqxx::connection& connection, const EntityDeclaration& entity);

// What ensure_entity_table would find, read-only (`tidemark check`): the same comparison,
// with every problem rather than the first, and nothing created, altered or recorded.
struct EntityTableCheck {
  bool exists = false;  // false: ensure_entity_table will create the table
  std::vector<SchemaProblem> problems;  // each as EntitySchemaError would say it
  std::vector<std::string> added_columns;  // the columns ensure_entity_table will add
  std::vector<ColumnAlteration> altered_columns;  // the columns it will widen
};
EntityTableCheck check_entity_table(pqxx::connection& connection, const EntityDeclaration& entity);

}  // namespace tidemark::pipeline::db
