#pragma once
// Tidemark's schema: the migrations in sql/migrations/, applied in name order, each once.
#include <pqxx/pqxx>

namespace tidemark::pipeline::db {

// Applies pending migrations from sql/migrations/ in order, each in its own transaction,
// serialized across processes by an advisory lock. Safe to call from every command.
void migrate(pqxx::connection& connection);

}  // namespace tidemark::pipeline::db
