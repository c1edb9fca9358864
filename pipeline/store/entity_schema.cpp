#include "pipeline/store/entity_schema.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include "pipeline/store/entity_sql.hpp"
#include "pipeline/store/migrate.hpp"
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

[[noreturn]] void mismatch(const EntityDeclaration& entity, std::string_view column, const std::string& is,
                           const std::string& says) {
  throw EntitySchemaError("table " + entity.table + ", column " + std::string(column) + ": is " + is +
                          ", the config says " + says);
}

// The key: the table's one primary key column, text.
void check_key(const EntityDeclaration& entity, const std::vector<CatalogColumn>& columns) {
  const std::string says = "the key, text primary key";
  const auto* key = find_column(columns, entity.key);
  if (key == nullptr) mismatch(entity, entity.key, "missing", says);
  if (key->type != "text") mismatch(entity, entity.key, key->type, says);
  if (!key->in_primary_key || key->primary_key_columns != 1) {
    mismatch(entity, entity.key, "text but not the table's primary key", says);
  }
}

// The revision: bigint NOT NULL, which the revision filter compares with every version.
void check_revision(const EntityDeclaration& entity, const std::vector<CatalogColumn>& columns) {
  const std::string says = "the revision, bigint NOT NULL";
  const auto* revision = find_column(columns, entity.revision);
  if (revision == nullptr) mismatch(entity, entity.revision, "missing", says);
  if (revision->type != "bigint") mismatch(entity, entity.revision, revision->type, says);
  if (!revision->not_null) mismatch(entity, entity.revision, "bigint, nullable", says);
}

}  // namespace

EntityTableChanges ensure_entity_table(pqxx::connection& connection, const EntityDeclaration& entity) {
  EntityTableChanges changes;
  pqxx::work txn(connection);
  // Held to the end of the transaction, as by migrate: a second process waits here, then
  // reads the catalog as the first left it.
  txn.exec_params(std::string(sql::kMigrateLock), kMigrationLockId);

  const auto owner = txn.exec_params(std::string(sql::kEntityTableOwner), entity.table);
  const bool recorded = !owner.empty();
  if (recorded && owner[0][0].as<std::string>() != entity.name) {
    throw EntitySchemaError("table " + entity.table + " belongs to entity " + owner[0][0].as<std::string>() +
                            "; entity " + entity.name + " cannot use it");
  }

  const auto columns = read_columns(txn, entity.table);
  if (columns.empty()) {
    txn.exec(build_entity_sql(entity).create_table);
    changes.created = true;
  } else {
    check_key(entity, columns);
    check_revision(entity, columns);
    std::string additions;  // ADD COLUMN clauses of one ALTER TABLE
    const auto add = [&](const std::string& name, const std::string& type) {
      additions += (additions.empty() ? " ADD COLUMN " : ", ADD COLUMN ") + quote_identifier(name) + " " + type;
      changes.added_columns.push_back(name);
    };
    std::vector<std::string> declared = {entity.key, entity.revision};
    for (const auto& column : value_columns(entity)) {
      declared.push_back(column.name);
      const auto* found = find_column(columns, column.name);
      if (found == nullptr) {
        // A new field of a table Tidemark manages adds a nullable column; a foreign table
        // is adopted only as it is, "every declared column" present with its exact type.
        if (!recorded) mismatch(entity, column.name, "missing", column.config_type);
        add(column.name, column.type);
      } else if (found->type != column.type) {
        mismatch(entity, column.name, found->type, column.config_type);
      }
    }
    for (const auto& [name, type] : {std::pair{kPipelineColumn, std::string("text")},
                                     std::pair{kUpdatedAtColumn, std::string("timestamp with time zone")}}) {
      declared.emplace_back(name);
      const auto* found = find_column(columns, name);
      if (found == nullptr) {
        add(std::string(name), type);
      } else if (found->type != type) {
        throw EntitySchemaError("table " + entity.table + ", column " + std::string(name) + ": is " + found->type +
                                ", Tidemark's bookkeeping column is " + type);
      }
    }
    for (const auto& column : columns) {
      if (std::find(declared.begin(), declared.end(), column.name) != declared.end()) continue;
      // Every insert names only declared columns: any other must take NULL or its default.
      if (column.not_null && !column.has_default) {
        mismatch(entity, column.name, column.type + " NOT NULL without a default", "nothing about it");
      }
      changes.unused_columns.push_back(column.name);
    }
    if (!additions.empty()) txn.exec("ALTER TABLE " + quote_identifier(entity.table) + additions);
    changes.adopted = !recorded;
  }
  txn.exec_params(std::string(sql::kEntityRecord), entity.name, entity.table, definition_json(entity));
  txn.commit();
  return changes;
}

}  // namespace tidemark::pipeline::db
