// `tidemark migrate --config` and the declared entities' tables (docs/entities.md
// "The table"): the process creates each table, extends it with a new field, and exits 2
// naming the table, the column and both types when a field's type changed; the one log line
// of a first start's migrations.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sql/statements.hpp"
#include "tests/support/process.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark {
namespace {

using testing::ProcessResult;
using testing::run_tidemark;
using testing::TempDir;
using testing::TestDatabase;
using ::testing::HasSubstr;
using ::testing::Not;

// A config declaring entity orders with `fields` (YAML lines under fields:).
std::string config_with(const std::string& fields) {
  return "entities:\n"
         "  orders:\n"
         "    key: order_id\n"
         "    revision: version\n"
         "    fields:\n" +
         fields +
         "pipelines:\n"
         "  orders_daily:\n"
         "    entity: orders\n"
         "    source: {kind: file, path: data/orders, format: jsonl}\n";
}

TEST(CliMigrate, WithConfigCreatesExtendsAndRefusesAChangedTypeWithExitTwo) {
  TestDatabase db;
  TempDir dir;
  const auto migrate = [&](const std::string& fields) {
    const auto config = dir.write("config.yaml", config_with(fields));
    return run_tidemark({"migrate", "--config", config.string(), "--database", db.url()});
  };

  ProcessResult result = migrate("      amount: {type: decimal, precision: 14, scale: 4}\n");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("migrations applied\nentity orders: table orders created\n"));
  EXPECT_EQ(db.scalar("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'orders'::regclass "
                      "AND attname = 'amount'"),
            "numeric(14,4)");

  result = migrate("      amount: {type: decimal, precision: 14, scale: 4}\n      paid: {type: boolean}\n");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("entity orders: table orders up to date, columns added: paid\n"));

  result = migrate("      paid: {type: boolean}\n");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr("entity orders: table orders has columns the declaration does not name, left "
                                    "unused: amount"));

  // More digits at the same scale lose nothing: made; fewer after the point would round: refused.
  result = migrate("      amount: {type: decimal, precision: 16, scale: 4}\n");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("entity orders: table orders up to date, columns widened: amount numeric(16,4)\n"));

  result = migrate("      amount: {type: decimal, precision: 16, scale: 2}\n");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("table orders, column amount: is numeric(16,4), the config says decimal(16,2); "
                                    "Tidemark will not change it"));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM tidemark_entities"), "1");
}

// Two processes at once serialize on the migration lock (the thread-level proof, with both
// held at the lock, is EntitySchemaTest.TwoConnectionsEnsuringAtOnce…): both succeed, one
// creates the table and the other finds it.
TEST(CliMigrate, TwoProcessesAtOnceBothSucceedAndOneCreatesTheTable) {
  TestDatabase db;
  TempDir dir;
  const auto config = dir.write("config.yaml", config_with("      amount: {type: decimal, precision: 14, scale: 4}\n"));
  const std::vector<std::string> args = {"migrate", "--config", config.string(), "--database", db.url()};
  auto first = testing::start_tidemark(args);
  auto second = testing::start_tidemark(args);
  const ProcessResult results[] = {first->wait(), second->wait()};
  int created = 0;
  for (const auto& result : results) {
    EXPECT_EQ(result.exit_code, 0) << result.err;
    if (result.out.find("table orders created") != std::string::npos) ++created;
  }
  EXPECT_EQ(created, 1);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM tidemark_entities"), "1");
}

// A database of its own beside `db`'s, not migrated (a TestDatabase is), dropped at the end.
class UnmigratedDatabase {
 public:
  explicit UnmigratedDatabase(const TestDatabase& db) : db_(db), name_(db.name() + "_fresh"), url_(db.url()) {
    db_.scalar("CREATE DATABASE " + name_);
    url_.replace(url_.find("/" + db.name() + "?"), db.name().size() + 1, "/" + name_);
  }
  ~UnmigratedDatabase() { db_.scalar("DROP DATABASE " + name_ + " WITH (FORCE)"); }
  const std::string& url() const { return url_; }

 private:
  const TestDatabase& db_;
  std::string name_;
  std::string url_;
};

// A first start says in one line what it did to the schema (docs/operations.md "Logs"); a
// start with nothing to apply says nothing about it at info.
TEST(CliMigrate, AFirstStartLogsOneLineForTheMigrations) {
  TestDatabase db;
  const UnmigratedDatabase fresh(db);
  const std::string last(sql::kMigrations.back().version);
  const std::string expected = "database schema at " + last.substr(0, last.find('_')) + ", " +
                               std::to_string(sql::kMigrations.size()) + " migrations applied";

  const ProcessResult first = run_tidemark({"migrate", "--database", fresh.url()});
  const ProcessResult again = run_tidemark({"migrate", "--database", fresh.url()});

  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_THAT(first.err, HasSubstr(expected));
  EXPECT_THAT(first.err, Not(HasSubstr("applying migration")));
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.err, Not(HasSubstr("database schema")));
}

// --log-level debug names each migration as it is applied.
TEST(CliMigrate, AtDebugEachMigrationIsNamed) {
  TestDatabase db;
  const UnmigratedDatabase fresh(db);

  const ProcessResult result = run_tidemark({"migrate", "--database", fresh.url(), "--log-level", "debug"});

  EXPECT_EQ(result.exit_code, 0) << result.err;
  for (const auto& migration : sql::kMigrations) {
    EXPECT_THAT(result.err, HasSubstr("applying migration " + std::string(migration.version)));
  }
}

}  // namespace
}  // namespace tidemark
