cmake_minimum_required(VERSION 3.21)  # a script run with -P: file(COPY_FILE), if(IN_LIST)
# Writes OUTPUT_DIR/sql/statements.hpp and OUTPUT_DIR/sql/statements.cpp from the .sql files
# under SQL_DIR: every statement as a named constant, named from its path
# (entity/apply_batch.sql -> tidemark::sql::kEntityApplyBatch), so a misspelt statement fails
# the build; and the files under migrations/ as one list, in name order (the order they apply).
file(GLOB_RECURSE sql_files RELATIVE ${SQL_DIR} ${SQL_DIR}/*.sql)
list(SORT sql_files)

set(header "#pragma once\n// Generated from sql/ by cmake/embed_sql.cmake. Do not edit.\n// Every statement under sql/, named from its path (entity/apply_batch.sql -> kEntityApplyBatch),\n// and the migrations in the order they apply. Add a statement by adding a .sql file.\n#include <array>\n#include <string_view>\n\nnamespace tidemark::sql {\n\n")
set(source "// Generated from sql/ by cmake/embed_sql.cmake. Do not edit.\n#include \"sql/statements.hpp\"\n\nnamespace tidemark::sql {\n\n")
set(migrations "")
set(migration_count 0)
set(names "")
foreach(path IN LISTS sql_files)
  file(READ ${SQL_DIR}/${path} content)
  string(FIND "${content}" ")tidemark_sql\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "sql/${path} contains the raw-string delimiter )tidemark_sql\"")
  endif()
  set(literal "R\"tidemark_sql(${content})tidemark_sql\"")
  if(path MATCHES "^migrations/([^/]+)$")
    string(APPEND migrations "    Migration{\"${CMAKE_MATCH_1}\", ${literal}},\n")
    math(EXPR migration_count "${migration_count} + 1")
    continue()
  endif()
  # entity/apply_batch.sql -> kEntityApplyBatch
  string(REGEX REPLACE "\\.sql$" "" stem "${path}")
  string(REGEX MATCHALL "[A-Za-z0-9]+" parts "${stem}")
  set(name "k")
  foreach(part IN LISTS parts)
    string(SUBSTRING "${part}" 0 1 first)
    string(SUBSTRING "${part}" 1 -1 rest)
    string(TOUPPER "${first}" first)
    string(APPEND name "${first}${rest}")
  endforeach()
  if(name IN_LIST names)
    message(FATAL_ERROR "sql/${path} gives the statement name ${name}, which another file under sql/ already has")
  endif()
  list(APPEND names ${name})
  string(APPEND header "// sql/${path}\nextern const std::string_view ${name};\n")
  string(APPEND source "const std::string_view ${name} = ${literal};\n\n")
endforeach()

string(APPEND header "
// A file under sql/migrations/: its name, recorded in schema_migrations once applied, and its text.
struct Migration {
  std::string_view version;
  std::string_view text;
};

// Every migration, in name order: the order they are applied in.
extern const std::array<Migration, ${migration_count}> kMigrations;

}  // namespace tidemark::sql
")
string(APPEND source "const std::array<Migration, ${migration_count}> kMigrations = {\n${migrations}};\n\n}  // namespace tidemark::sql\n")

# Rewritten only when the text changes, so editing a statement recompiles one file.
foreach(kind IN ITEMS hpp cpp)
  if(kind STREQUAL "hpp")
    set(body "${header}")
  else()
    set(body "${source}")
  endif()
  file(WRITE ${OUTPUT_DIR}/sql/statements.${kind}.tmp "${body}")
  file(COPY_FILE ${OUTPUT_DIR}/sql/statements.${kind}.tmp ${OUTPUT_DIR}/sql/statements.${kind} ONLY_IF_DIFFERENT)
endforeach()
