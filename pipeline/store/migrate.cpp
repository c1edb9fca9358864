#include "pipeline/store/migrate.hpp"

#include <spdlog/spdlog.h>

#include "sql/statements.hpp"

namespace tidemark::pipeline::db {

void migrate(pqxx::connection& connection) {
  // One transaction per migration; the advisory lock makes a second process wait and then
  // see the migration as applied, so two commands starting at once are safe.
  for (const auto& migration : sql::kMigrations) {
    const std::string version(migration.version);
    pqxx::work txn(connection);
    txn.exec_params(std::string(sql::kMigrateLock), kMigrationLockId);
    txn.exec(std::string(sql::kMigrateCreateSchemaMigrations));
    if (!txn.exec_params(std::string(sql::kMigrateIsApplied), version).empty()) {
      txn.commit();
      continue;
    }
    spdlog::info("applying migration {}", version);
    txn.exec(std::string(migration.text));
    txn.exec_params(std::string(sql::kMigrateRecordApplied), version);
    txn.commit();
  }
}

}  // namespace tidemark::pipeline::db
