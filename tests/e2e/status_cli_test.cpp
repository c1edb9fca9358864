// `tidemark status` as an operator runs it: after a run that quarantined
// records and left outbox events undelivered, the table and the --json document show the
// last run with its ledger counts, the checkpoint, the open quarantine and the pending and
// dead events per destination; an unknown --pipeline exits 2 naming it; and being
// read-only, status never creates the embedded database.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <boost/json.hpp>

#include "tests/support/change_log_store.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark {
namespace {

using testing::ProcessResult;
using testing::TestDatabase;
using testing::run_tidemark;
using ::testing::HasSubstr;
using ::testing::Not;

class StatusCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() / ("tidemark-status-" + std::to_string(::getpid()) + "-" + db_.name());
    std::filesystem::create_directories(folder_);
    source_ = folder_ / "in.csv";
    std::ofstream(source_) << "transaction_id,source_revision,amount,account_id\n"
                           << "a,1,10.00,x\n"
                           << "b,1,20.00,y\n"
                           << "c,1,NaN,z\n"      // invalid
                           << "d,1,1.00,z\n"
                           << "d,1,2.00,z\n";    // d: both conflict
    // Nothing delivers: no relay runs, so every event stays pending.
    config_ = folder_ / "tidemark.yaml";
    std::ofstream(config_) << "pipelines:\n  p:\n    source: {path: " << source_.string() << "}\n"
                           << "    destinations:\n"
                           << "      - {name: ledger, kind: http, url: http://127.0.0.1:9/x, secret_env: SOME_VAR}\n"
                           << "      - {name: account_balance, kind: view}\n"
                           << "  idle:\n    source: {path: " << source_.string() << "}\n";
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  ProcessResult status(std::vector<std::string> extra) {
    std::vector<std::string> args{"status", "--config", config_.string(), "--database", db_.url()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_tidemark(args);
  }

  void run_p() {
    const ProcessResult run =
        run_tidemark({"run", "--pipeline", "p", "--config", config_.string(), "--database", db_.url()});
    ASSERT_EQ(run.exit_code, 0) << run.err;
  }

  TestDatabase db_;
  std::filesystem::path folder_;
  std::filesystem::path source_;
  std::filesystem::path config_;
};

TEST_F(StatusCliTest, JsonShowsTheLastRunWithLedgerCountsCheckpointOpenQuarantineAndEventsPerDestination) {
  run_p();
  // One of ledger's events given up on, as the relay does after its last attempt.
  auto connection = db_.connect();
  ASSERT_EQ(testing::settle_due(*connection, "ledger", testing::Settlement::kDead, 1), 1);

  const ProcessResult result = status({"--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto document = boost::json::parse(result.out).as_object();
  const auto& pipelines = document.at("pipelines").as_array();
  ASSERT_EQ(pipelines.size(), 2u) << result.out;  // both configured pipelines, by name
  EXPECT_EQ(pipelines[0].at("pipeline").as_string(), "idle");
  EXPECT_TRUE(pipelines[0].at("last_run").is_null());
  EXPECT_EQ(pipelines[0].at("checkpoints").as_array().size(), 0u);

  const auto& p = pipelines[1].as_object();
  std::set<std::string> keys;
  for (const auto& field : p) keys.insert(std::string(field.key()));
  EXPECT_EQ(keys, (std::set<std::string>{"pipeline", "configured", "last_run", "checkpoints", "open_quarantine",
                                         "files_read", "destinations"}));
  EXPECT_EQ(p.at("files_read").to_number<std::int64_t>(), 1);  // its source file, in the registry
  EXPECT_EQ(p.at("pipeline").as_string(), "p");
  EXPECT_EQ(p.at("configured").as_bool(), true);

  const auto& run = p.at("last_run").as_object();
  EXPECT_EQ(std::to_string(run.at("run_id").to_number<std::int64_t>()), db_.scalar("SELECT max(id) FROM runs"));
  EXPECT_EQ(run.at("status").as_string(), "succeeded");
  EXPECT_EQ(run.at("trigger").as_string(), "cli");
  EXPECT_EQ(run.at("mode").as_string(), "resume");
  EXPECT_EQ(run.at("input").to_number<std::int64_t>(), 5);
  EXPECT_EQ(run.at("inserted").to_number<std::int64_t>(), 2);
  EXPECT_EQ(run.at("invalid").to_number<std::int64_t>(), 1);
  EXPECT_EQ(run.at("conflict").to_number<std::int64_t>(), 2);
  EXPECT_EQ(run.at("batches").to_number<std::int64_t>(), 1);
  EXPECT_FALSE(run.at("started_at").is_null());
  EXPECT_FALSE(run.at("finished_at").is_null());
  EXPECT_GE(run.at("duration_ms").to_number<std::int64_t>(), 0);

  const auto& checkpoints = p.at("checkpoints").as_array();
  ASSERT_EQ(checkpoints.size(), 1u);
  EXPECT_EQ(checkpoints[0].at("position").as_string(), "in.csv:" + std::to_string(std::filesystem::file_size(source_)));
  EXPECT_GT(checkpoints[0].at("age_ms").to_number<std::int64_t>(), 0);  // the run ended before status began
  EXPECT_EQ(p.at("open_quarantine").to_number<std::int64_t>(), 3);

  // Two accepted changes, one event each per destination, in the order the config lists them.
  const auto& destinations = p.at("destinations").as_array();
  ASSERT_EQ(destinations.size(), 2u) << result.out;
  EXPECT_EQ(destinations[0].at("name").as_string(), "ledger");
  EXPECT_EQ(destinations[0].at("kind").as_string(), "http");
  EXPECT_EQ(destinations[0].at("pending").to_number<std::int64_t>(), 1);
  EXPECT_EQ(destinations[0].at("dead").to_number<std::int64_t>(), 1);
  EXPECT_TRUE(destinations[0].at("view").is_null());
  EXPECT_EQ(destinations[1].at("name").as_string(), "account_balance");
  EXPECT_EQ(destinations[1].at("kind").as_string(), "view");
  EXPECT_EQ(destinations[1].at("pending").to_number<std::int64_t>(), 2);
  EXPECT_EQ(destinations[1].at("dead").to_number<std::int64_t>(), 0);
  // Its two events wait: the view lags behind the older one.
  EXPECT_GT(destinations[1].at("view").at("lag_ms").to_number<std::int64_t>(), 0);
  EXPECT_EQ(destinations[1].at("view").at("dead").to_number<std::int64_t>(), 0);
}

TEST_F(StatusCliTest, TableNamesEachPipelineItsRunCountsQuarantineAndDestinations) {
  run_p();
  const ProcessResult result = status({"--pipeline", "p"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("pipeline p\n"));
  EXPECT_THAT(result.out, Not(HasSubstr("pipeline idle")));
  EXPECT_THAT(result.out, HasSubstr(" succeeded (trigger cli, mode resume)"));
  EXPECT_THAT(result.out, HasSubstr("5 input in 1 batch(es): 2 inserted, 0 updated, 0 unchanged, 0 stale, "
                                    "0 superseded, 0 duplicate, 1 invalid, 2 conflict"));
  EXPECT_THAT(result.out, HasSubstr("checkpoint   in.csv:"));
  EXPECT_THAT(result.out, HasSubstr("quarantine   3 open"));
  EXPECT_THAT(result.out, HasSubstr("destination  ledger (http): 2 pending, 0 dead"));
  EXPECT_THAT(result.out, HasSubstr("destination  account_balance (view): 2 pending, 0 dead; view lag "));
}

// A run's reason is printed under it: what a webhook said, or the tick that serve ran once the
// database was back from an outage (docs/operations.md). A run without one prints none.
TEST_F(StatusCliTest, TheLastRunsReasonIsPrintedUnderItWhenItHasOne) {
  run_p();
  const ProcessResult plain = status({"--pipeline", "p"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_THAT(plain.out, Not(HasSubstr("reason:")));

  // The reason serve records for a tick missed in an outage (app/serve/service.cpp).
  const std::string reason = "scheduled tick at 2026-12-07T14:00:00.000000Z missed: the database did not answer then";
  db_.scalar("UPDATE runs SET reason = '" + reason + "' RETURNING 1");
  const ProcessResult result = status({"--pipeline", "p"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr(" succeeded (trigger cli, mode resume)\n               reason: " + reason + "\n"));
  const ProcessResult json = status({"--json", "--pipeline", "p"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(boost::json::parse(json.out).at("pipelines").at(0).at("last_run").at("reason").as_string(), reason)
      << json.out;
}

TEST_F(StatusCliTest, APipelineOnlyTheDatabaseKnowsIsShownAsNotInTheConfig) {
  run_p();
  std::ofstream(config_) << "pipelines:\n  idle:\n    source: {path: " << source_.string() << "}\n";
  const ProcessResult result = status({"--json", "--pipeline", "p"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto p = boost::json::parse(result.out).at("pipelines").at(0).as_object();
  EXPECT_EQ(p.at("configured").as_bool(), false);
  EXPECT_EQ(p.at("open_quarantine").to_number<std::int64_t>(), 3);
  // Its events are still undelivered; the kinds come from what the database knows.
  const auto& destinations = p.at("destinations").as_array();
  ASSERT_EQ(destinations.size(), 2u) << result.out;
  EXPECT_EQ(destinations[0].at("name").as_string(), "account_balance");
  EXPECT_EQ(destinations[1].at("name").as_string(), "ledger");
  EXPECT_EQ(destinations[1].at("pending").to_number<std::int64_t>(), 2);
  EXPECT_TRUE(destinations[1].at("kind").is_null());
}

TEST_F(StatusCliTest, AnUnknownPipelineExitsTwoNamingItAndTheKnownOnes) {
  const ProcessResult result = status({"--pipeline", "nope"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("--pipeline nope: no such pipeline"));
  EXPECT_THAT(result.err, HasSubstr("known: idle, p"));
  EXPECT_EQ(result.out, "");
}

TEST(StatusCli, WithoutADatabaseItCreatesNoEmbeddedClusterAndSaysHowToStartOne) {
  const auto home = std::filesystem::temp_directory_path() / ("tidemark-status-home-" + std::to_string(::getpid()));
  std::filesystem::remove_all(home);
  testing::ProcessOptions options;
  options.env["TIDEMARK_HOME"] = home.string();
  const ProcessResult result = run_tidemark({"status"}, options);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_THAT(result.err, HasSubstr("no embedded cluster under $TIDEMARK_HOME (" + home.string() + ")"));
  EXPECT_THAT(result.err, HasSubstr("tidemark db start"));
  EXPECT_FALSE(std::filesystem::exists(home)) << "status created the home";
}

}  // namespace
}  // namespace tidemark
