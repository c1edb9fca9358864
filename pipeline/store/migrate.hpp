#pragma once
// Tidemark's schema: the migrations in sql/migrations/, applied in name order, each once.
#include <pqxx/pqxx>

namespace tidemark::pipeline::db {

// The advisory lock every schema change holds (sql/migrate/lock.sql): migrations and entity
// tables (entity_schema.hpp). Any id works as long as every tidemark process uses the same one.
inline constexpr long long kMigrationLockId = 7406961730223;

// Applies pending migrations from sql/migrations/ in order, each in its own transaction,
// serialized across processes by an advisory lock. Safe to call from every command. Logs one
// line when it applied any (`database schema at 0028, 25 migrations applied`), each
// migration's name at debug.
void migrate(pqxx::connection& connection);

}  // namespace tidemark::pipeline::db
