// Migrations are embedded as one generated list (sql/statements.hpp, cmake/embed_sql.cmake):
// every file under sql/migrations/ is in it, in name order, and migrate applies each once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "pipeline/store/migrate.hpp"
#include "pipeline/store/pg/database.hpp"
#include "sql/statements.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::pipeline {
namespace {

using testing::query_rows;
using testing::Rows;
using testing::TestDatabase;

// The file names under sql/migrations/ in the source tree, sorted.
std::vector<std::string> migration_files() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TIDEMARK_SOURCE_DIR) + "/sql/migrations")) {
    if (entry.path().extension() == ".sql") names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Migrate, EmbedsEveryMigrationFileInNameOrder) {
  std::vector<std::string> embedded;
  for (const auto& migration : sql::kMigrations) {
    embedded.emplace_back(migration.version);
    EXPECT_FALSE(migration.text.empty()) << migration.version;
  }
  EXPECT_EQ(embedded, migration_files());
}

TEST(Migrate, AppliesEachMigrationOnceInNameOrder) {
  TestDatabase db;  // migrated once already
  auto connection = db.connect();
  db::migrate(*connection);  // a second time: nothing to apply
  Rows expected;
  for (const auto& name : migration_files()) expected.push_back({name});
  EXPECT_EQ(query_rows(db, "SELECT version FROM schema_migrations ORDER BY applied_at, version"), expected);
}

}  // namespace
}  // namespace tidemark::pipeline
