// Migrations are embedded as one generated list (sql/statements.hpp, cmake/embed_sql.cmake):
// every file under sql/migrations/ is in it, in name order, and migrate applies each once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string_view>

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

// A database at 0010 with data upgrades. In a schema of its own (the test database
// is migrated already): 0001..0010 are applied and recorded as `migrate` would, rows are
// written as that schema knew them, and `migrate` then applies 0011 to them.
TEST(Migrate, RowsWrittenAt0010KeepTheirPositionsAndDecodeContextsAfter0011) {
  TestDatabase db;
  auto connection = db.connect();
  {
    pqxx::nontransaction txn(*connection);
    txn.exec("CREATE SCHEMA at0010");
    txn.exec("SET search_path TO at0010");  // for the session: migrate below works in it too
    txn.exec(std::string(sql::kMigrateCreateSchemaMigrations));
  }
  for (const auto& migration : sql::kMigrations) {
    if (std::string_view(migration.version) > "0010_run_stopped.sql") break;
    pqxx::work txn(*connection);
    txn.exec(std::string(migration.text));
    txn.exec_params(std::string(sql::kMigrateRecordApplied), std::string(migration.version));
    txn.commit();
  }
  {
    pqxx::work txn(*connection);
    // Before 0007 a name was stored as it was (file_bytes NULL), backslash included; since,
    // escaped, with its bytes beside it.
    txn.exec(R"(INSERT INTO checkpoint (pipeline, source, position, file, file_bytes, byte_offset) VALUES
                  ('old', '/in', 'x\y.csv:7', 'x\y.csv', NULL, 7),
                  ('new', '/in', 'b\xe9.csv:10', 'b\xe9.csv', '\x62e92e637376', 10))");
    txn.exec(R"(INSERT INTO quarantine (pipeline, source, reason, detail, raw, format, csv_header, position) VALUES
                  ('p', '/in', 'invalid', 'amount', 'tx,1,NaN', 'csv', 'transaction_id,source_revision,amount', 'a.csv:2 (byte 38)'),
                  ('p', '/in', 'invalid', 'amount', '{"amount":1}', 'jsonl', NULL, 'a.jsonl:1 (byte 0)'))");
    txn.commit();
  }
  db::migrate(*connection);

  pqxx::nontransaction txn(*connection);
  const auto rows = [&](const std::string& query) {
    Rows result;
    for (const auto& row : txn.exec(query)) {
      std::vector<std::string> values;
      for (const auto& field : row) values.push_back(field.is_null() ? "<null>" : field.c_str());
      result.push_back(std::move(values));
    }
    return result;
  };
  EXPECT_EQ(rows("SELECT version FROM schema_migrations WHERE version > '0010_run_stopped.sql' "
                 "AND version < '0012' ORDER BY version"),
            (Rows{{"0011_source_neutral_positions.sql"}}));
  // The file source's position text, as it parses it: the old name's backslash escaped.
  EXPECT_EQ(rows("SELECT pipeline, position FROM checkpoint ORDER BY pipeline"),
            (Rows{{"new", "b\\xe9.csv:10"}, {"old", "x\\\\y.csv:7"}}));
  EXPECT_EQ(rows("SELECT column_name FROM information_schema.columns WHERE table_schema = 'at0010' "
                 "AND table_name = 'checkpoint' AND column_name IN ('file', 'file_bytes', 'byte_offset')"),
            Rows{});
  EXPECT_EQ(rows("SELECT format, decode_context FROM quarantine ORDER BY id"),
            (Rows{{"csv", "transaction_id,source_revision,amount"}, {"jsonl", ""}}));
  // 0012: every earlier entry is the built-in entity's, with no field named.
  EXPECT_EQ(rows("SELECT entity, field FROM quarantine ORDER BY id"),
            (Rows{{"transaction", "<null>"}, {"transaction", "<null>"}}));
  // Any connector's format is accepted now, and a record without context stores ''.
  txn.exec("INSERT INTO quarantine (pipeline, source, reason, detail, raw, format, position) "
           "VALUES ('p', 'stream', 'invalid', 'amount', 'x', 'avro', 'seq 1')");
  EXPECT_EQ(rows("SELECT decode_context FROM quarantine WHERE format = 'avro'"), (Rows{{""}}));
}

// A database that holds what the old quarantine index let through, two open
// entries of one record (a release's new entry had the source 'quarantine', a replay then
// added one of the record's own source), upgrades to one open entry per record; and
// a release done before 0026 names its run from then on.
TEST(Migrate, QuarantineEntriesOfOneRecordKeepOneOpenEntryAfter0026) {
  TestDatabase db;
  auto connection = db.connect();
  {
    pqxx::nontransaction txn(*connection);
    txn.exec("CREATE SCHEMA at0025");
    txn.exec("SET search_path TO at0025");
    txn.exec(std::string(sql::kMigrateCreateSchemaMigrations));
  }
  for (const auto& migration : sql::kMigrations) {
    if (std::string_view(migration.version) >= "0026") break;
    pqxx::work txn(*connection);
    txn.exec(std::string(migration.text));
    txn.exec_params(std::string(sql::kMigrateRecordApplied), std::string(migration.version));
    txn.commit();
  }
  {
    pqxx::work txn(*connection);
    txn.exec(R"(INSERT INTO runs (id, pipeline, trigger, mode, status, reason)
                VALUES (7, 'p', 'cli', 'resume', 'succeeded', 'quarantine release 1'))");
    // 1 read from /in and released; 2 its release's entry; 3 a replay's; 4 another record.
    txn.exec(R"(INSERT INTO quarantine (id, pipeline, source, reason, detail, raw, format, position, released_at,
                                        released_by, release_outcome) VALUES
                  (1, 'p', '/in', 'invalid', 'amount', 'tx,1,NaN', 'csv', 'a.csv:2', now(), 'u', 'invalid'),
                  (2, 'p', 'quarantine', 'invalid', 'amount', 'tx,1,NaN', 'csv', 'a.csv:2', NULL, NULL, NULL),
                  (3, 'p', '/in', 'invalid', 'amount', 'tx,1,NaN', 'csv', 'a.csv:2', NULL, NULL, NULL),
                  (4, 'p', '/in', 'invalid', 'amount', 'ty,1,NaN', 'csv', 'a.csv:3', NULL, NULL, NULL))");
    txn.commit();
  }
  db::migrate(*connection);
  EXPECT_EQ(query_rows(db, "SELECT id, source, released_at IS NULL, released_by, release_outcome, release_run_id "
                           "FROM at0025.quarantine ORDER BY id"),
            (Rows{{"1", "/in", "f", "u", "invalid", "7"},
                  {"2", "/in", "f", "migration 0026 (entry 3 is this record's open entry)", "duplicate", "<null>"},
                  {"3", "/in", "t", "<null>", "<null>", "<null>"},
                  {"4", "/in", "t", "<null>", "<null>", "<null>"}}));
}

}  // namespace
}  // namespace tidemark::pipeline
