#include "pipeline/store/entity_schema.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include <spdlog/spdlog.h>

#include "pipeline/store/entity_sql.hpp"
#include "pipeline/store/migrate.hpp"
#include "pipeline/store/pg/row.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline::db {

namespace {

// A column as the catalog has it (sql/entity/columns.sql).
struct CatalogColumn {
  std::string name;
  std::string type;  // format_type's spelling
  bool not_null = false;
  bool has_default = false;
  bool in_primary_key = false;
  int primary_key_columns = 0;  // of the table's primary key, 0 when it has none
};

std::vector<CatalogColumn> read_columns(pqxx::transaction_base& txn, const std::string& table) {
  std::vector<CatalogColumn> columns;
  for (const auto& row : txn.exec_params(std::string(sql::kEntityColumns), table)) {
    columns.push_back({row["name"].as<std::string>(), row["type"].as<std::string>(), row["not_null"].as<bool>(),
                       row["has_default"].as<bool>(), row["in_primary_key"].as<bool>(),
                       row["primary_key_columns"].as<int>()});
  }
  return columns;
}

const CatalogColumn* find_column(const std::vector<CatalogColumn>& columns, std::string_view name) {
  const auto found = std::find_if(columns.begin(), columns.end(), [&](const auto& c) { return c.name == name; });
  return found == columns.end() ? nullptr : &*found;
}

// What a table is against a declaration: the one comparison ensure_entity_table acts on and
// check_entity_table reports (each problem an EntitySchemaError's message).
struct Comparison {
  bool exists = false;
  bool recorded = false;  // tidemark_entities has the table for this entity
  std::vector<SchemaProblem> problems;
  std::vector<std::pair<std::string, std::string>> additions;  // column, type: what ALTER TABLE adds
  std::vector<ColumnAlteration> alterations;  // what ALTER COLUMN ... TYPE changes
  std::vector<std::string> unused_columns;
};

class Comparer {
 public:
  Comparer(const EntityDeclaration& entity, Comparison& out) : entity_(entity), out_(out) {}

  // `why`: what follows the comparison, "; ..." (the statement to run by hand), or nothing.
  void mismatch(std::string_view column, const std::string& is, const std::string& says,
                const std::string& why = "") {
    out_.problems.push_back({std::string(column), "table " + entity_.table + ", column " + std::string(column) +
                                                      ": is " + is + ", the config says " + says + why});
  }

  // A declared column of another type: widened when that loses nothing and the table is
  // Tidemark's (a table being adopted is taken as it is), else refused with the statement.
  void check_type(const EntityColumn& column, const std::string& is) {
    const auto change = column_change(entity_.table, column, is);
    if (!change) return;
    if (change->automatic && out_.recorded) {
      out_.alterations.push_back({column.name, is, column.type, change->statement, change->reason});
      return;
    }
    const std::string by_hand = "; to change it by hand: " + change->statement;
    if (change->automatic) {
      mismatch(column.name, is, column.config_type, "; a table is adopted only as it is" + by_hand);
    } else {
      mismatch(column.name, is, column.config_type, "; Tidemark will not change it: " + change->reason + by_hand);
    }
  }

  // The key: the table's one primary key column, text.
  void check_key(const std::vector<CatalogColumn>& columns) {
    const std::string says = "the key, text primary key";
    const auto* key = find_column(columns, entity_.key);
    if (key == nullptr) return mismatch(entity_.key, "missing", says);
    if (key->type != "text") return mismatch(entity_.key, key->type, says);
    if (!key->in_primary_key || key->primary_key_columns != 1) {
      mismatch(entity_.key, "text but not the table's primary key", says);
    }
  }

  // The revision: bigint NOT NULL, which the revision filter compares with every version.
  void check_revision(const std::vector<CatalogColumn>& columns) {
    const std::string says = "the revision, bigint NOT NULL";
    const auto* revision = find_column(columns, entity_.revision);
    if (revision == nullptr) return mismatch(entity_.revision, "missing", says);
    if (revision->type != "bigint") return mismatch(entity_.revision, revision->type, says);
    if (!revision->not_null) mismatch(entity_.revision, "bigint, nullable", says);
  }

  void compare(const std::vector<CatalogColumn>& columns) {
    check_key(columns);
    check_revision(columns);
    std::vector<std::string> declared = {entity_.key, entity_.revision};
    for (const auto& column : value_columns(entity_)) {
      declared.push_back(column.name);
      const auto* found = find_column(columns, column.name);
      if (found == nullptr) {
        // A new field of a table Tidemark manages adds a nullable column; a foreign table
        // is adopted only as it is, "every declared column" present with its exact type.
        if (!out_.recorded) mismatch(column.name, "missing", column.config_type);
        else out_.additions.emplace_back(column.name, column.type);
      } else {
        check_type(column, found->type);
      }
    }
    for (const auto& [name, type] : {std::pair{kPipelineColumn, std::string("text")},
                                     std::pair{kUpdatedAtColumn, std::string("timestamp with time zone")}}) {
      declared.emplace_back(name);
      const auto* found = find_column(columns, name);
      if (found == nullptr) {
        out_.additions.emplace_back(std::string(name), type);
      } else if (found->type != type) {
        out_.problems.push_back({std::string(name), "table " + entity_.table + ", column " + std::string(name) +
                                                        ": is " + found->type + ", Tidemark's bookkeeping column is " +
                                                        type});
      }
    }
    for (const auto& column : columns) {
      if (std::find(declared.begin(), declared.end(), column.name) != declared.end()) continue;
      // Every insert names only declared columns: any other must take NULL or its default.
      if (column.not_null && !column.has_default) {
        mismatch(column.name, column.type + " NOT NULL without a default", "nothing about it");
      }
      out_.unused_columns.push_back(column.name);
    }
  }

 private:
  const EntityDeclaration& entity_;
  Comparison& out_;
};

// Reads the catalog only. `entities_recorded`: tidemark_entities exists (a database that has
// not been migrated yet has recorded no entity).
Comparison compare_table(pqxx::transaction_base& txn, const EntityDeclaration& entity, bool entities_recorded) {
  Comparison comparison;
  if (entities_recorded) {
    const auto owner = txn.exec_params(std::string(sql::kEntityTableOwner), entity.table);
    comparison.recorded = !owner.empty();
    const std::string owner_name = comparison.recorded ? db::Row(owner[0]).get<std::string>("name") : "";
    if (comparison.recorded && owner_name != entity.name) {
      comparison.problems.push_back(
          {"", "table " + entity.table + " belongs to entity " + owner_name + "; entity " + entity.name +
                   " cannot use it"});
      comparison.recorded = false;
      return comparison;
    }
  }
  const auto columns = read_columns(txn, entity.table);
  comparison.exists = !columns.empty();
  if (comparison.exists) Comparer(entity, comparison).compare(columns);
  return comparison;
}

// Runs `alteration`'s statement. PostgreSQL may still refuse a change that loses nothing (a
// view or rule of the user's uses the column): an EntitySchemaError then, with the statement.
void alter_column(pqxx::transaction_base& txn, const EntityDeclaration& entity, const ColumnAlteration& alteration) {
  try {
    txn.exec(alteration.statement);
  } catch (const pqxx::sql_error& error) {
    std::string why = error.what();
    why = why.substr(0, why.find('\n'));
    throw EntitySchemaError("table " + entity.table + ", column " + alteration.column + ": is " + alteration.from +
                            ", the declaration needs " + alteration.to + "; PostgreSQL refused to widen it (" + why +
                            "); to change it by hand: " + alteration.statement);
  }
}

}  // namespace

EntitySchemaError schema_error(const std::vector<SchemaProblem>& problems) {
  std::string message;
  for (const auto& problem : problems) message += (message.empty() ? "" : "\n") + problem.message;
  return EntitySchemaError(message);
}

EntityTableChanges ensure_entity_table(pqxx::connection& connection, const EntityDeclaration& entity) {
  EntityTableChanges changes;
  pqxx::work txn(connection);
  // Held to the end of the transaction, as by migrate: a second process waits here, then
  // reads the catalog as the first left it.
  txn.exec_params(std::string(sql::kMigrateLock), kMigrationLockId);

  const Comparison comparison = compare_table(txn, entity, /*entities_recorded=*/true);
  if (!comparison.problems.empty()) throw schema_error(comparison.problems);
  if (!comparison.exists) {
    txn.exec(build_entity_sql(entity).create_table);
    changes.created = true;
  } else {
    std::string additions;  // ADD COLUMN clauses of one ALTER TABLE
    for (const auto& [name, type] : comparison.additions) {
      additions += (additions.empty() ? " ADD COLUMN " : ", ADD COLUMN ") + quote_identifier(name) + " " + type;
      changes.added_columns.push_back(name);
    }
    changes.unused_columns = comparison.unused_columns;
    if (!additions.empty()) txn.exec("ALTER TABLE " + quote_identifier(entity.table) + additions);
    // A table rewrite (a larger scale) holds the table's exclusive lock to the commit, as
    // every change here does: a load of it waits rather than meeting it half changed.
    for (const auto& alteration : comparison.alterations) alter_column(txn, entity, alteration);
    changes.altered_columns = comparison.alterations;
    changes.adopted = !comparison.recorded;
  }
  txn.exec_params(std::string(sql::kEntityRecord), entity.name, entity.table, definition_json(entity));
  txn.commit();
  for (const auto& altered : changes.altered_columns) {
    spdlog::info("entity {}: table {}, column {}: {} -> {} ({}): {}", entity.name, entity.table, altered.column,
                 altered.from, altered.to, altered.reason, altered.statement);
  }
  return changes;
}

EntityTableCheck check_entity_table(pqxx::connection& connection, const EntityDeclaration& entity) {
  pqxx::read_transaction txn(connection);
  const bool entities_recorded =
      db::Row(txn.exec(std::string(sql::kEntityRegistryExists)).at(0)).get<bool>("registry_exists");
  Comparison comparison = compare_table(txn, entity, entities_recorded);
  EntityTableCheck check;
  check.exists = comparison.exists;
  check.problems = std::move(comparison.problems);
  for (auto& [name, type] : comparison.additions) check.added_columns.push_back(std::move(name));
  check.altered_columns = std::move(comparison.alterations);
  return check;
}

}  // namespace tidemark::pipeline::db
