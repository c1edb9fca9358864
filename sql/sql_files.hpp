#pragma once
// The SQL files under sql/, compiled into the binary (see cmake/embed_sql.cmake).
#include <map>
#include <string>

namespace tidemark::sql {

// Every file keyed by its path relative to sql/, e.g. "migrations/0001_initial.sql".
const std::map<std::string, std::string>& files();

// The text of one file; throws std::out_of_range naming the file when it does not exist.
const std::string& statement(const std::string& path);

}  // namespace tidemark::sql
