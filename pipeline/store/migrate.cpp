#include "pipeline/store/migrate.hpp"

#include <cstddef>
#include <string_view>

#include <spdlog/spdlog.h>

#include "sql/statements.hpp"

namespace tidemark::pipeline::db {

namespace {

// "0028" of "0028_relay_lease_renewal.sql": the number the schema is at.
std::string_view schema_number(std::string_view version) { return version.substr(0, version.find('_')); }

}  // namespace

void migrate(pqxx::connection& connection) {
  std::size_t applied = 0;
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
    spdlog::debug("applying migration {}", version);
    txn.exec(std::string(migration.text));
    txn.exec_params(std::string(sql::kMigrateRecordApplied), version);
    txn.commit();
    ++applied;
  }
  // One line for a first start (or an upgrade), none when there was nothing to do: every
  // command migrates, and a line on each would say nothing.
  const std::string_view at = schema_number(sql::kMigrations.back().version);
  if (applied > 0) {
    spdlog::info("database schema at {}, {} migration{} applied", at, applied, applied == 1 ? "" : "s");
  } else {
    spdlog::debug("database schema at {}, nothing to apply", at);
  }
}

}  // namespace tidemark::pipeline::db
