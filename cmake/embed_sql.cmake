# Writes OUTPUT: a C++ file defining tidemark::sql::files(), every .sql file under SQL_DIR
# keyed by its relative path.
file(GLOB_RECURSE sql_files RELATIVE ${SQL_DIR} ${SQL_DIR}/*.sql)
list(SORT sql_files)
set(body "// Generated from sql/ by cmake/embed_sql.cmake. Do not edit.\n#include \"sql/sql_files.hpp\"\n\n#include <stdexcept>\n\nnamespace tidemark::sql {\n\nconst std::map<std::string, std::string>& files() {\n  static const std::map<std::string, std::string> kFiles = {\n")
foreach(name IN LISTS sql_files)
  file(READ ${SQL_DIR}/${name} content)
  string(APPEND body "    {\"${name}\", R\"tidemark_sql(${content})tidemark_sql\"},\n")
endforeach()
string(APPEND body "  };\n  return kFiles;\n}\n\nconst std::string& statement(const std::string& path) {\n  auto found = files().find(path);\n  if (found == files().end()) throw std::out_of_range(\"no SQL file sql/\" + path + \" in this build\");\n  return found->second;\n}\n\n}  // namespace tidemark::sql\n")
file(WRITE ${OUTPUT}.tmp "${body}")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
