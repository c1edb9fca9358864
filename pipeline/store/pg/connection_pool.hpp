#pragma once
// The relay's name for db::Database (pipeline/relay/relay.hpp), kept while the relay is split
// in another change of issue 37; everything else names db::Database.
#include "pipeline/store/pg/database.hpp"

namespace tidemark::pipeline::db {

using ConnectionPool = Database;

}  // namespace tidemark::pipeline::db
