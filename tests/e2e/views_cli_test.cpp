// `tidemark views` as real processes against a real PostgreSQL (docs/views.md): `run` loads
// a CSV whose destinations are the two views, `relay --once` applies the events, and the
// views subcommands list, rebuild, retire and clean up, with the exit codes users see.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/change_log_store.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark {
namespace {

using testing::ProcessResult;
using testing::TestDatabase;
using testing::run_tidemark;
using ::testing::HasSubstr;

// The first load: t2's occurred_at is 2024-05-01 locally but 2024-05-02 in UTC.
constexpr char kFirstLoad[] =
    "transaction_id,source_revision,amount,account_id,occurred_at\n"
    "t1,1,10.00,a,2024-05-01T10:00:00Z\n"
    "t2,1,5.50,a,2024-05-01T23:30:00-02:00\n"
    "t3,1,-3.25,b,2024-05-02T08:00:00Z\n"
    "t4,1,7.00,c,2024-05-03T12:00:00Z\n"
    "t5,1,1.00,c,2024-05-03T13:00:00Z\n";
// Revisions: t1 changes its amount; t4 moves from account c to b and from 05-03 to 05-01.
constexpr char kSecondLoad[] =
    "transaction_id,source_revision,amount,account_id,occurred_at\n"
    "t1,2,12.00,a,2024-05-01T10:00:00Z\n"
    "t4,2,7.00,b,2024-05-01T12:00:00Z\n";

// Rows of the views that differ from what transaction_state says they should hold.
constexpr char kBalanceMismatches[] =
    "SELECT count(*) FROM (SELECT account_id, sum(amount) AS balance FROM transaction_state GROUP BY account_id) s "
    "FULL JOIN account_balance_v1 v USING (account_id) WHERE s.balance IS DISTINCT FROM v.balance";
constexpr char kDailyMismatches[] =
    "SELECT count(*) FROM (SELECT (occurred_at AT TIME ZONE 'UTC')::date AS day, sum(amount) AS total, "
    "count(*) AS events FROM transaction_state GROUP BY 1) s FULL JOIN daily_totals_v1 v USING (day) "
    "WHERE s.total IS DISTINCT FROM v.total OR s.events IS DISTINCT FROM v.events";

class ViewsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "tidemark-views-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    folder_ = pattern;
    std::filesystem::create_directories(folder_ / "in");
    config_ = (folder_ / "config.yaml").string();
    std::ofstream(config_) << "pipelines:\n"
                           << "  p:\n"
                           << "    source: {kind: file, path: " << (folder_ / "in").string() << ", format: csv}\n"
                           << "    destinations:\n"
                           << "      - {name: account_balance, kind: view}\n"
                           << "      - {name: daily_totals, kind: view}\n";
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(folder_, ignored);
  }

  ProcessResult tidemark(std::vector<std::string> args) const {
    args.insert(args.end(), {"--config", config_, "--database", db_.url()});
    return run_tidemark(args);
  }

  // Loads both files (a run each).
  void load() {
    std::ofstream(folder_ / "in" / "1.csv") << kFirstLoad;
    const auto first = tidemark({"run", "--pipeline", "p"});
    ASSERT_EQ(first.exit_code, 0) << first.both();
    std::ofstream(folder_ / "in" / "2.csv") << kSecondLoad;
    const auto second = tidemark({"run", "--pipeline", "p"});
    ASSERT_EQ(second.exit_code, 0) << second.both();
    ASSERT_EQ(db_.scalar("SELECT count(*) FROM transaction_state"), "5");
    // 7 accepted changes, one outbox row per view destination each.
    ASSERT_EQ(db_.scalar("SELECT count(*) FROM outbox"), "14");
  }

  // Loads both files and relays until every outbox event is delivered.
  void load_and_relay() {
    load();
    if (HasFatalFailure()) return;
    const auto relayed = tidemark({"relay", "--once"});
    ASSERT_EQ(relayed.exit_code, 0) << relayed.both();
    ASSERT_EQ(db_.scalar("SELECT count(*) FROM outbox WHERE status <> 'delivered'"), "0")
        << db_.scalar("SELECT string_agg(idempotency_key || ' ' || status, ', ') FROM outbox");
  }

  std::string list() const {
    const auto listed = tidemark({"views", "list"});
    EXPECT_EQ(listed.exit_code, 0) << listed.both();
    return listed.out;
  }

  TestDatabase db_;
  std::filesystem::path folder_;
  std::string config_;
};

TEST_F(ViewsCli, RelayAppliesTheLoadsToBothViewsInAgreementWithTransactionState) {
  load_and_relay();

  EXPECT_EQ(db_.scalar(kBalanceMismatches), "0");
  EXPECT_EQ(db_.scalar("SELECT string_agg(account_id || '=' || balance, ' ' ORDER BY account_id) "
                       "FROM account_balance_v1"),
            "a=17.50 b=3.75 c=1.00");
  EXPECT_EQ(db_.scalar(kDailyMismatches), "0");
  EXPECT_EQ(db_.scalar("SELECT string_agg(day || '=' || total || '/' || events, ' ' ORDER BY day) "
                       "FROM daily_totals_v1"),
            "2024-05-01=19.00/2 2024-05-02=2.25/2 2024-05-03=1.00/1");
}

TEST_F(ViewsCli, ListShowsBothViewsLiveAtVersionOne) {
  load_and_relay();

  const std::string listed = list();
  EXPECT_THAT(listed, HasSubstr("account_balance\t1\taccount_balance_v1\tlive\t"));
  EXPECT_THAT(listed, HasSubstr("daily_totals\t1\tdaily_totals_v1\tlive\t"));
}

TEST_F(ViewsCli, ListNamesAViewWithDeadEventsAndSaysToRebuildIt) {
  load();
  // The relay gives up on every account_balance event; it delivers daily_totals'.
  auto connection = db_.connect();
  ASSERT_EQ(testing::settle_due(*connection, "account_balance", testing::Settlement::kDead), 7);
  const auto relayed = tidemark({"relay", "--once"});
  ASSERT_EQ(relayed.exit_code, 0) << relayed.both();
  const auto listed = tidemark({"views", "list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.both();
  // Columns: view, version, table, status, lag_seconds, pending, dead, ...
  EXPECT_THAT(listed.out, HasSubstr("\tlive\t"));
  EXPECT_THAT(listed.out, ::testing::ContainsRegex("account_balance\t1\taccount_balance_v1\tlive\t[0-9.]+\t0\t7\t"));
  EXPECT_THAT(listed.out, ::testing::ContainsRegex("daily_totals\t1\tdaily_totals_v1\tlive\t0.000\t0\t0\t"));
  EXPECT_THAT(listed.err, HasSubstr("view account_balance has dead events it will never apply"));
  EXPECT_THAT(listed.err, HasSubstr("tidemark views rebuild account_balance --version N"));
  EXPECT_THAT(listed.err, ::testing::Not(HasSubstr("view daily_totals has dead events")));
}

TEST_F(ViewsCli, RebuildCreatesAnEqualVersionAndDropRetiresTheOldOne) {
  load_and_relay();

  const auto rebuilt = tidemark({"views", "rebuild", "account_balance", "--version", "2"});
  ASSERT_EQ(rebuilt.exit_code, 0) << rebuilt.both();
  EXPECT_THAT(rebuilt.out, HasSubstr("account_balance_v2 is live with 3 rows"));
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM ((SELECT account_id, balance, version FROM account_balance_v1 "
                       "EXCEPT SELECT account_id, balance, version FROM account_balance_v2) UNION ALL "
                       "(SELECT account_id, balance, version FROM account_balance_v2 "
                       "EXCEPT SELECT account_id, balance, version FROM account_balance_v1)) d"),
            "0");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM account_balance_v2"), "3");
  EXPECT_THAT(list(), HasSubstr("account_balance\t2\taccount_balance_v2\tlive\t"));

  const auto dropped = tidemark({"views", "drop", "account_balance", "--version", "1"});
  ASSERT_EQ(dropped.exit_code, 0) << dropped.both();
  EXPECT_THAT(dropped.out, HasSubstr("account_balance_v1 retired"));
  EXPECT_EQ(db_.scalar("SELECT to_regclass('account_balance_v1') IS NULL"), "t");
  const std::string listed = list();
  EXPECT_THAT(listed, HasSubstr("account_balance\t1\taccount_balance_v1\tretired\t"));
  EXPECT_THAT(listed, HasSubstr("account_balance\t2\taccount_balance_v2\tlive\t"));
}

TEST_F(ViewsCli, DroppingTheLastLiveVersionIsAUsageError) {
  load_and_relay();
  ASSERT_EQ(tidemark({"views", "rebuild", "account_balance", "--version", "2"}).exit_code, 0);
  ASSERT_EQ(tidemark({"views", "drop", "account_balance", "--version", "1"}).exit_code, 0);

  const auto refused = tidemark({"views", "drop", "account_balance", "--version", "2"});
  EXPECT_EQ(refused.exit_code, 2) << refused.both();
  EXPECT_THAT(refused.both(), HasSubstr("account_balance_v2 is the only live version of account_balance"));
  EXPECT_EQ(db_.scalar("SELECT status FROM views WHERE name = 'account_balance' AND version = 2"), "live");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM account_balance_v2"), "3");
}

TEST_F(ViewsCli, VersionNumbersAreNeverReused) {
  load_and_relay();
  ASSERT_EQ(tidemark({"views", "rebuild", "account_balance", "--version", "2"}).exit_code, 0);
  ASSERT_EQ(tidemark({"views", "drop", "account_balance", "--version", "1"}).exit_code, 0);

  const auto again = tidemark({"views", "rebuild", "account_balance", "--version", "2"});
  EXPECT_EQ(again.exit_code, 2) << again.both();
  EXPECT_THAT(again.both(), HasSubstr("never reused"));
  const auto retired = tidemark({"views", "rebuild", "account_balance", "--version", "1"});
  EXPECT_EQ(retired.exit_code, 2) << retired.both();
  EXPECT_THAT(retired.both(), HasSubstr("never reused"));
}

TEST_F(ViewsCli, CleanupRefusesARetentionWithinTheRedeliveryHorizonAndKeepsRecentInboxRows) {
  load_and_relay();
  const std::string inbox_rows = db_.scalar("SELECT count(*) FROM inbox");
  ASSERT_NE(inbox_rows, "0") << "daily_totals records its events in the inbox";

  const auto refused = tidemark({"views", "cleanup", "--retention", "1m"});
  EXPECT_EQ(refused.exit_code, 2) << refused.both();
  EXPECT_THAT(refused.both(), HasSubstr("redelivery window"));
  EXPECT_THAT(refused.both(), HasSubstr("inbox retention 1m is not longer")) << "written as the config writes it";

  const auto cleaned = tidemark({"views", "cleanup", "--retention", "168h"});
  EXPECT_EQ(cleaned.exit_code, 0) << cleaned.both();
  EXPECT_THAT(cleaned.out, HasSubstr("0 inbox record(s) older than 168h deleted"));
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM inbox"), inbox_rows);

  // One record aged past the retention goes; the others stay.
  db_.scalar("WITH aged AS (UPDATE inbox SET processed_at = now() - interval '200 hours' "
             "WHERE event_id = (SELECT min(event_id) FROM inbox) RETURNING 1) SELECT count(*) FROM aged");
  const auto aged = tidemark({"views", "cleanup", "--retention", "168h"});
  EXPECT_EQ(aged.exit_code, 0) << aged.both();
  EXPECT_THAT(aged.out, HasSubstr("1 inbox record(s) older than 168h deleted"));
  EXPECT_EQ(std::stoi(db_.scalar("SELECT count(*) FROM inbox")), std::stoi(inbox_rows) - 1);
}

struct HelpCase {
  std::vector<std::string> args;
  std::vector<std::string> mentions;  // what the help must say about the command
};

class ViewsCliHelp : public ::testing::TestWithParam<HelpCase> {};

TEST_P(ViewsCliHelp, ExitsZeroAndDescribesTheCommand) {
  std::vector<std::string> args = GetParam().args;
  args.push_back("--help");
  const ProcessResult result = run_tidemark(args);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("Usage"));
  for (const auto& mention : GetParam().mentions) EXPECT_THAT(result.out, HasSubstr(mention));
}

INSTANTIATE_TEST_SUITE_P(
    ViewsCli, ViewsCliHelp,
    ::testing::Values(HelpCase{{"views"}, {"list", "rebuild", "drop", "cleanup"}},
                      HelpCase{{"views", "list"}, {"--config", "--database"}},
                      HelpCase{{"views", "rebuild"}, {"NAME", "--version", "--database"}},
                      HelpCase{{"views", "drop"}, {"NAME", "--version", "--database"}},
                      HelpCase{{"views", "cleanup"}, {"--retention", "168h", "--database"}}));

}  // namespace
}  // namespace tidemark
