// `tidemark check` and the config conveniences as real processes (docs/cli.md "check",
// docs/configuration.md): every error of a config at once with its line, the environment
// its *_env keys name, the view warning, the database reachable or skipped with --offline,
// never creating or migrating a database; --pipeline names and --config DIR on any command;
// `views cleanup` taking its retention from the config.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
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
using testing::TestDatabase;
using testing::run_tidemark;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSecret[] = "whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ=";

// A port nothing listens on: connecting is refused at once.
constexpr char kUnreachable[] = "postgresql://tidemark@127.0.0.1:1/tidemark";

class CheckCli : public ::testing::Test {
 protected:
  void SetUp() override {
    // An empty home: a check that created the embedded cluster would leave files in it.
    options_.env["TIDEMARK_HOME"] = (folder_ / "home").string();
    options_.env["CHECK_LEDGER_SECRET"] = kSecret;
    options_.working_directory = folder_;
  }

  std::string write_config(const std::string& yaml) const { return dir_.write("tidemark.yaml", yaml).string(); }

  ProcessResult check(const std::vector<std::string>& args) const {
    std::vector<std::string> all = {"check"};
    all.insert(all.end(), args.begin(), args.end());
    return run_tidemark(all, options_);
  }

  // `check --offline` of `config`, expected to exit with `exit_code` (the output shown if not).
  ProcessResult check_offline(const std::string& config, int exit_code) const {
    ProcessResult result = check({"--config", config, "--offline"});
    EXPECT_EQ(result.exit_code, exit_code) << result.out << result.err;
    return result;
  }

  const testing::TempDir dir_;
  const std::filesystem::path& folder_ = dir_.path();
  ProcessOptions options_;
};

// What check prints for a diagnostic of `config`: "<severity>: <config><where and what>".
::testing::Matcher<std::string> says(const std::string& severity, const std::string& config, const std::string& rest) {
  return HasSubstr(severity + ": " + config + rest);
}

// Every destination kind, each listed where it should be.
constexpr char kCleanConfig[] =
    "pipelines:\n"
    "  orders:\n"
    "    source: {path: in/orders.csv}\n"
    "    schedule: {cron: \"*/5 * * * *\"}\n"
    "    destinations:\n"
    "      - {name: ledger, kind: http, url: \"${CHECK_LEDGER_URL:-http://127.0.0.1:9000/events}\", "
    "secret_env: CHECK_LEDGER_SECRET}\n"
    "      - {name: account_balance, kind: view}\n"
    "retention: {inbox: 200h}\n";

TEST_F(CheckCli, ACleanConfigExitsZeroAndNamesTheDatabaseItReached) {
  const TestDatabase database;
  const ProcessResult result = check({"--config", write_config(kCleanConfig), "--database", database.url()});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("0 error(s), 0 warning(s); 1 pipeline(s); database reachable (--database)"));
  EXPECT_THAT(result.err, Not(HasSubstr("error")));
  EXPECT_FALSE(std::filesystem::exists(folder_ / "home")) << "a check never creates the embedded cluster";
}

TEST_F(CheckCli, EveryErrorIsReportedAtOnceWithItsLine) {
  const std::string config = write_config(
      "pipelines:\n"                                       // 1
      "  orders:\n"                                        // 2
      "    source: {path: in/orders.csv}\n"                // 3
      "    batch_size: lots\n"                             // 4
      "    schedule: {cron: \"99 * * * *\"}\n"             // 5
      "    destinations:\n"                                // 6
      "      - {name: d, kind: kafka}\n"                   // 7
      "  refunds:\n"                                       // 8
      "    sorce: {path: in/refunds.csv}\n"                // 9
      "relay: {max_attempts: 0}\n"                         // 10
      "retention: {inbox: forever}\n");                    // 11
  const ProcessResult result = check_offline(config, 2);
  for (const auto& expected :
       {":4: pipelines.orders.batch_size: expected a positive integer", ":5: pipelines.orders.schedule.cron:",
        ":7: pipelines.orders.destinations[0].kind: expected http, view or nats", ":9: unknown key 'sorce'",
        ":10: relay.max_attempts:", ":11: retention.inbox:"}) {
    EXPECT_THAT(result.err, says("error", config, expected)) << result.err;
  }
  EXPECT_THAT(result.err, HasSubstr("minute field '99'"));
  EXPECT_THAT(result.out, HasSubstr("6 error(s)"));
  // Every other command stops at the same errors, all of them, exit 2.
  const ProcessResult run = run_tidemark({"run", "--config", config, "--pipeline", "orders"}, options_);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, AllOf(HasSubstr(config + ":4: pipelines.orders.batch_size"), HasSubstr(config + ":11:")));
}

TEST_F(CheckCli, AnUnsetVariableIsAnErrorNamingItTheDestinationAndTheLine) {
  options_.env["CHECK_LEDGER_SECRET"] = std::nullopt;
  options_.env["CHECK_SOURCE_DIR"] = std::nullopt;
  const std::string config = write_config(
      "pipelines:\n"                                                                              // 1
      "  orders:\n"                                                                               // 2
      "    source: {path: \"${CHECK_SOURCE_DIR}/orders.csv\"}\n"                                  // 3
      "    destinations:\n"                                                                       // 4
      "      - {name: ledger, kind: http, url: http://127.0.0.1:9/e, secret_env: CHECK_LEDGER_SECRET}\n");  // 5
  const ProcessResult result = check_offline(config, 2);
  EXPECT_THAT(result.err, says("error", config,
                               ":3: pipelines.orders.source.path: environment variable CHECK_SOURCE_DIR is not set"));
  EXPECT_THAT(result.err,
              says("error", config, ":5: destination 'ledger': environment variable CHECK_LEDGER_SECRET is not set"));
  // Set, but not a signing secret: the relay would refuse it too.
  options_.env["CHECK_LEDGER_SECRET"] = "hunter2";
  options_.env["CHECK_SOURCE_DIR"] = "in";
  const ProcessResult malformed = check_offline(config, 2);
  EXPECT_THAT(malformed.err, HasSubstr(":5: destination 'ledger': environment variable CHECK_LEDGER_SECRET does not "
                                       "hold a Standard Webhooks secret"));
  EXPECT_THAT(malformed.err, Not(HasSubstr("hunter2")));
  options_.env["CHECK_LEDGER_SECRET"] = kSecret;
  check_offline(config, 0);
}

TEST_F(CheckCli, AnUnreachableDatabaseIsAnErrorUnlessOffline) {
  const std::string config = write_config(kCleanConfig);
  const ProcessResult unreachable = check({"--config", config, "--database", kUnreachable});
  EXPECT_EQ(unreachable.exit_code, 2) << unreachable.out << unreachable.err;
  EXPECT_THAT(unreachable.err, HasSubstr("error: cannot connect to the database from --database: "));
  EXPECT_THAT(unreachable.out, HasSubstr("1 error(s)"));

  const ProcessResult offline = check({"--config", config, "--database", kUnreachable, "--offline"});
  EXPECT_EQ(offline.exit_code, 0) << offline.out << offline.err;
  EXPECT_THAT(offline.out, HasSubstr("database not checked (--offline)"));

  // The same resolution as every command: TIDEMARK_DATABASE_URL, then the config's database:.
  options_.env["TIDEMARK_DATABASE_URL"] = kUnreachable;
  EXPECT_THAT(check({"--config", config}).err, HasSubstr("from TIDEMARK_DATABASE_URL"));
  options_.env["TIDEMARK_DATABASE_URL"] = std::nullopt;
  const ProcessResult from_file = check({"--config", write_config(std::string("database: ") + kUnreachable + "\n" +
                                                                  kCleanConfig)});
  EXPECT_THAT(from_file.err, HasSubstr("from database: in "));
  // Nothing configured and no embedded cluster: said so, and none is created.
  const ProcessResult none = check({"--config", write_config(kCleanConfig)});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("no embedded cluster under $TIDEMARK_HOME"));
  EXPECT_FALSE(std::filesystem::exists(folder_ / "home"));
}

TEST_F(CheckCli, ADatabaseIsCheckedNotMigrated) {
  const TestDatabase server;
  const std::string name = server.name() + "_empty";
  {
    auto admin = server.connect();
    pqxx::nontransaction(*admin).exec("CREATE DATABASE " + name);
  }
  std::string url = server.url();
  url.replace(url.find("/" + server.name()), server.name().size() + 1, "/" + name);
  const ProcessResult result = check({"--config", write_config(kCleanConfig), "--database", url});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  {
    pqxx::connection empty(url);
    EXPECT_EQ(pqxx::nontransaction(empty).exec("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")[0][0]
                  .as<int>(),
              0)
        << "check applied migrations";
  }
  auto admin = server.connect();
  pqxx::nontransaction(*admin).exec("DROP DATABASE " + name + " WITH (FORCE)");
}

TEST_F(CheckCli, AViewThatCanRebuildFromASnapshotButMissesATransactionPipelineIsAWarning) {
  const std::string config = write_config(
      "entities:\n"                                                   // 1
      "  orders: {key: order_id, revision: version}\n"                // 2
      "pipelines:\n"                                                  // 3
      "  payments:\n"                                                 // 4
      "    source: {path: in/payments.csv}\n"                         // 5
      "    destinations:\n"                                           // 6
      "      - {name: account_balance, kind: view}\n"                 // 7
      "      - {name: daily_totals, kind: view}\n"                    // 8
      "  refunds:\n"                                                  // 9
      "    source: {path: in/refunds.csv}\n"                          // 10
      "  orders:\n"                                                   // 11
      "    entity: orders\n"                                          // 12
      "    source: {path: in/orders.csv}\n");                         // 13
  const ProcessResult result = check_offline(config, 0);
  EXPECT_THAT(result.err, says("warning", config,
                               ":7: view destination 'account_balance' is not listed by pipeline(s) refunds, which "
                               "also write the transaction entity"));
  // daily_totals never starts from a snapshot; orders loads another entity.
  EXPECT_THAT(result.err, Not(HasSubstr("'daily_totals'")));
  EXPECT_THAT(result.err, Not(HasSubstr("orders,")));
  EXPECT_THAT(result.out, HasSubstr("0 error(s), 1 warning(s)"));
}

TEST_F(CheckCli, DeclaredViewsAreCheckedAndAWarningSaysTheyAreNotBuiltYet) {
  const std::string config = write_config(
      "entities:\n"                                                                        // 1
      "  orders:\n"                                                                        // 2
      "    key: order_id\n"                                                                // 3
      "    revision: version\n"                                                            // 4
      "    fields: {customer_id: {type: text}, total: {type: decimal, precision: 14, scale: 4}}\n"  // 5
      "views:\n"                                                                           // 6
      "  paid_by_customer: {entity: orders, group_by: [customer_id], columns: {t: sum(total)}}\n"  // 7
      "  balances: {entity: transaction, group_by: partition, columns: {balance: sum(amount)}}\n"  // 8
      "  broken: {entity: orders, group_by: [total], columns: {n: count}}\n");          // 9
  const ProcessResult result = check_offline(config, 2);
  EXPECT_THAT(result.err, says("warning", config,
                               ":7: view paid_by_customer (entity orders, strategy inbox) is parsed and checked, but "
                               "declared views are not built yet: Tidemark keeps no table for it and no pipeline can "
                               "feed it"));
  EXPECT_THAT(result.err, says("warning", config, ":8: view balances (entity transaction, strategy version_filter)"));
  EXPECT_THAT(result.err, says("error", config, ":9: views.broken.group_by[0]: 'total' is a decimal field"));
  EXPECT_THAT(result.out, HasSubstr("1 error(s), 2 warning(s)"));
}

TEST_F(CheckCli, HelpDescribesTheCommand) {
  const ProcessResult result = check({"--help"});
  EXPECT_EQ(result.exit_code, 0);
  for (const auto* mention : {"--config", "--offline", "--database", "every error", "*_env"}) {
    EXPECT_THAT(result.out, HasSubstr(mention));
  }
  EXPECT_EQ(check({}).exit_code, 2) << "--config is required";
}

// --- conveniences on every command ----------------------------------------------------------

TEST_F(CheckCli, ADirectoryGivenAsConfigIsNamedAsADirectory) {
  for (const auto& command : std::vector<std::vector<std::string>>{
           {"check", "--config", folder_.string()},
           {"run", "--config", folder_.string(), "--pipeline", "orders"}}) {
    const ProcessResult result = run_tidemark(command, options_);
    EXPECT_EQ(result.exit_code, 2) << command[0];
    EXPECT_THAT(result.err, HasSubstr("config file " + folder_.string() + " is a directory, not a YAML file"))
        << command[0];
    EXPECT_THAT(result.err, Not(HasSubstr("YAML syntax")));
  }
}

TEST_F(CheckCli, PipelineOptionsFollowTheConfigsNameRule) {
  for (const auto& command : std::vector<std::vector<std::string>>{
           {"run", "--pipeline", "orders 2024", "--source", "in.csv"},
           {"quarantine", "list", "--pipeline", "a/b"}}) {
    const ProcessResult result = run_tidemark(command, options_);
    EXPECT_EQ(result.exit_code, 2) << command[0];
    EXPECT_THAT(result.err, HasSubstr("--pipeline '" + command[2 + (command[0] == "quarantine" ? 1 : 0)] +
                                      "' is not a pipeline name: pipeline names are 1-64 characters of A-Z, a-z, "
                                      "0-9, '_' and '-'"))
        << result.err;
  }
  EXPECT_FALSE(std::filesystem::exists(folder_ / "home")) << "refused before touching any database";
}

TEST_F(CheckCli, ViewsCleanupTakesItsRetentionFromTheConfig) {
  const TestDatabase database;
  const std::string config = write_config(kCleanConfig);  // retention.inbox: 200h
  const ProcessResult from_config =
      run_tidemark({"views", "cleanup", "--config", config, "--database", database.url()}, options_);
  EXPECT_EQ(from_config.exit_code, 0) << from_config.err;
  EXPECT_THAT(from_config.out, HasSubstr("0 inbox record(s) older than 200h deleted"));
  const ProcessResult given =
      run_tidemark({"views", "cleanup", "--config", config, "--database", database.url(), "--retention", "300h"},
                   options_);
  EXPECT_THAT(given.out, HasSubstr("older than 300h deleted"));
  const ProcessResult without = run_tidemark({"views", "cleanup", "--database", database.url()}, options_);
  EXPECT_THAT(without.out, HasSubstr("older than 168h deleted"));
}

// Entity orders with amount of `scale` (precision 14).
std::string orders_config(int scale) {
  return "entities:\n"
         "  orders:\n"
         "    key: order_id\n"
         "    revision: version\n"
         "    fields:\n"
         "      amount: {type: decimal, precision: 14, scale: " +
         std::to_string(scale) +
         "}\n"
         "pipelines:\n"
         "  orders_daily:\n"
         "    entity: orders\n"
         "    source: {kind: file, path: data/orders, format: jsonl}\n";
}

// A declared entity is compared with its table as `migrate --config` would, read-only: a
// missing table is a note (it will be created), a smaller scale an error at the field's line
// naming the table and the column, and the table is left as it was.
TEST_F(CheckCli, DeclaredEntitiesAreComparedWithTheirTablesWithoutChangingThem) {
  const TestDatabase database;
  const std::string amount_type =
      "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'orders'::regclass AND attname = "
      "'amount'";
  std::string config = write_config(orders_config(4));
  const ProcessResult before = check({"--config", config, "--database", database.url()});
  EXPECT_EQ(before.exit_code, 0) << before.out << before.err;
  EXPECT_THAT(before.err, says("note", config,
                               ": entity orders: table orders does not exist yet; the first run (or "
                               "`tidemark migrate --config`) creates it"));
  EXPECT_EQ(database.scalar("SELECT count(*) FROM pg_tables WHERE tablename = 'orders'"), "0");

  const ProcessResult migrated = run_tidemark({"migrate", "--config", config, "--database", database.url()}, options_);
  ASSERT_EQ(migrated.exit_code, 0) << migrated.err;
  const ProcessResult same = check({"--config", config, "--database", database.url()});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_THAT(same.err, Not(HasSubstr("entity orders")));

  config = write_config(orders_config(2));
  const ProcessResult changed = check({"--config", config, "--database", database.url()});
  EXPECT_EQ(changed.exit_code, 2) << changed.out << changed.err;
  EXPECT_THAT(changed.err, says("error", config,
                                ":6: entity orders: table orders, column amount: is numeric(14,4), the config says "
                                "decimal(14,2); Tidemark will not change it"));
  EXPECT_THAT(changed.out, HasSubstr("1 error(s)"));
  EXPECT_EQ(database.scalar(amount_type), "numeric(14,4)");
}

}  // namespace
}  // namespace tidemark
