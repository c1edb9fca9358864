// `kind: postgres` through the tidemark binary (docs/sources.md "postgres",
// docs/configuration.md): a run loads a table of another database and prints its checkpoint;
// `check` names an unset url_env; a rule of the file is exit 2 and a rule of the catalog exit 1,
// each naming the file, line and key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "tests/support/process.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark {
namespace {

using testing::ProcessOptions;
using testing::ProcessResult;
using testing::run_tidemark;
using testing::TestDatabase;
using ::testing::HasSubstr;

class PostgresSourceCli : public ::testing::Test {
 protected:
  PostgresSourceCli() {
    auto connection = source_.connect();
    pqxx::work txn(*connection);
    txn.exec("CREATE TABLE shop_orders (id bigint PRIMARY KEY, version bigint NOT NULL, total numeric NOT NULL, "
             "updated_at timestamptz NOT NULL);"
             "INSERT INTO shop_orders VALUES (1, 1, 10.25, '2020-01-01 00:00:01+00'), (2, 1, 99999999999.99, "
             "'2020-01-01 00:00:02+00')");
    txn.commit();
    options_.env["PGSOURCE_URL"] = source_.url();
  }

  // A config whose pipeline `orders` reads shop_orders with the source keys `source` (line 8).
  std::string config(const std::string& source) const {
    return dir_
        .write("tidemark.yaml",
               "entities:\n"
               "  orders:\n"
               "    key: order_id\n"
               "    revision: version\n"
               "    fields: {amount: {type: decimal, precision: 14, scale: 2, required: true}}\n"
               "pipelines:\n"
               "  orders:\n"
               "    entity: orders\n"
               "    source: {kind: postgres, url_env: PGSOURCE_URL, table: shop_orders, " +
                   source + ", columns: {order_id: id, amount: total}}\n")
        .string();
  }

  ProcessResult run(const std::string& config_file) const {
    return run_tidemark({"run", "--pipeline", "orders", "--config", config_file, "--database", target_.url(), "--json"},
                        options_);
  }

  TestDatabase target_;
  TestDatabase source_;
  testing::TempDir dir_;
  ProcessOptions options_;
};

TEST_F(PostgresSourceCli, ARunLoadsTheTableAndPrintsItsCursorAsTheCheckpoint) {
  const ProcessResult result = run(config("cursor: [updated_at, id], safety_lag: 1s"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr(R"("inserted":2)"));
  EXPECT_THAT(result.out, HasSubstr(R"("checkpoint":"[\"2020-01-01 00:00:02+00\",\"2\"]")"));
  EXPECT_EQ(target_.scalar("SELECT string_agg(amount::text, ' ' ORDER BY order_id) FROM orders"), "10.25 99999999999.99");
}

TEST_F(PostgresSourceCli, CheckNamesAnUnsetUrlEnvWithItsLine) {
  ProcessOptions without = options_;
  without.env["PGSOURCE_URL"] = std::nullopt;
  const ProcessResult result =
      run_tidemark({"check", "--offline", "--config", config("cursor: [updated_at, id]")}, without);
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr("tidemark.yaml:9: pipelines.orders.source.url_env: environment variable "
                                    "PGSOURCE_URL is not set"));
}

TEST_F(PostgresSourceCli, AFileRuleIsExitTwoAndACatalogRuleExitOneEachNamingTheKeyAndLine) {
  const ProcessResult alone = run(config("cursor: [id]"));
  EXPECT_EQ(alone.exit_code, 2) << alone.err;
  EXPECT_THAT(alone.err, HasSubstr("tidemark.yaml:9: pipelines.orders.source.cursor: a cursor of one column needs "
                                   "consistency: snapshot"));
  const ProcessResult by_id = run(config("cursor: [id, updated_at]"));
  EXPECT_EQ(by_id.exit_code, 1) << by_id.err;
  EXPECT_THAT(by_id.err, HasSubstr("tidemark.yaml:9: pipelines.orders.source.cursor: safety_lag (the default "
                                   "consistency) needs a timestamp as the first cursor column, and id is bigint"));
  EXPECT_EQ(target_.scalar("SELECT count(*) FROM checkpoint"), "0");
}

// --source names a file: given for a pipeline that reads a table, it is a usage error, not
// silently ignored.
TEST_F(PostgresSourceCli, SourceOrFormatForAPipelineOfAnotherKindIsAUsageError) {
  const std::string file = config("cursor: [updated_at, id], safety_lag: 1s");
  for (const auto& option : {std::vector<std::string>{"--source", "in.csv"}, std::vector<std::string>{"--format", "csv"}}) {
    std::vector<std::string> args = {"run", "--pipeline", "orders", "--config", file, "--database", target_.url()};
    args.insert(args.end(), option.begin(), option.end());
    const ProcessResult result = run_tidemark(args, options_);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_THAT(result.err, HasSubstr(option[0] + " applies to file sources only: pipeline orders reads its kind "
                                                  "postgres source as " + file + " configures it"));
  }
  EXPECT_EQ(target_.scalar("SELECT count(*) FROM runs"), "0");
}

}  // namespace
}  // namespace tidemark
