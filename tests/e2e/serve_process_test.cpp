// `tidemark serve` as a real process: configuration errors exit 2 before anything
// starts, SIGTERM stops after the batch in hand with state, outbox and checkpoint
// consistent, a second signal exits at once, and two serve processes on one database never
// run one pipeline at the same time.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/support/http_client.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kReceiverSecret[] = "whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ=";

class ServeProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("tidemark-serve-e2e-" + std::to_string(::getpid()) + "-" + db_.name());
    std::filesystem::create_directories(directory_);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  // A source of `count` valid records plus one invalid and one conflicting record; a config
  // with one pipeline over it, the given schedule, and an http destination (nobody listens
  // there: its outbox rows stay pending, which is what the consistency checks count).
  std::string write_config(int count, int batch_size, const std::string& schedule) {
    std::ofstream source(directory_ / "in.csv");
    source << "transaction_id,source_revision,amount,account_id\n";
    for (int i = 0; i < count; ++i) source << "tx-" << i << ",1," << (i % 900) << ".10,acct-" << i % 11 << "\n";
    source << "tx-bad,1,1e10,acct-1\n"
           << "tx-0,1,5.55,acct-0\n";
    const auto path = directory_ / "tidemark.yaml";
    std::ofstream config(path);
    config << "pipelines:\n  transactions:\n    source: {path: " << (directory_ / "in.csv").string() << "}\n"
           << "    batch_size: " << batch_size << "\n    schedule: " << schedule << "\n"
           << "    destinations:\n      - {name: ledger, kind: http, url: http://127.0.0.1:9/events, "
              "secret_env: TEST_LEDGER_SECRET}\n";
    return path.string();
  }

  std::unique_ptr<Process> start_serve(const std::string& config, unsigned short port) {
    ProcessOptions options;
    options.env = {{"TIDEMARK_DATABASE_URL", db_.url()}, {"TEST_LEDGER_SECRET", kReceiverSecret}};
    auto process = start_tidemark({"serve", "--config", config, "--listen", "127.0.0.1:" + std::to_string(port)}, options);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (http_request(port, "GET", "/healthz", {}, "", 1s).status != 200) {
      if (!process->running() || std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "serve did not come up: " << process->wait().err;
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
    return process;
  }

  int scalar_int(const std::string& sql) const { return std::stoi(db_.scalar(sql)); }

  // State, outbox, ledger and checkpoint tell one story.
  void expect_consistent() const {
    EXPECT_EQ(db_.scalar("SELECT count(*) FROM transaction_state"),
              db_.scalar("SELECT COALESCE(sum(inserted), 0) FROM batch_ledger"));
    EXPECT_EQ(db_.scalar("SELECT count(*) FROM outbox"),
              db_.scalar("SELECT COALESCE(sum(inserted + updated), 0) FROM batch_ledger"));
    EXPECT_EQ(db_.scalar("SELECT count(*) FROM quarantine"),
              db_.scalar("SELECT COALESCE(sum(invalid + conflict), 0) FROM batch_ledger"));
    EXPECT_EQ(db_.scalar("SELECT position FROM checkpoint WHERE pipeline = 'transactions'"),
              db_.scalar("SELECT end_position FROM batch_ledger ORDER BY committed_at DESC, id DESC LIMIT 1"));
    EXPECT_EQ(db_.scalar("SELECT count(*) FROM runs WHERE status IN ('queued', 'running')"), "0");
  }

  void wait_for_batches(int batches) const {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (scalar_int("SELECT count(*) FROM batch_ledger") < batches && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);
    }
    ASSERT_GE(scalar_int("SELECT count(*) FROM batch_ledger"), batches);
  }

  TestDatabase db_;
  std::filesystem::path directory_;
};

TEST_F(ServeProcessTest, AnInvalidCronExpressionExits2NamingTheKeyBeforeListening) {
  const std::string config = write_config(10, 100, "{cron: \"61 * * * *\"}");
  const unsigned short port = free_port();
  ProcessOptions options;
  options.env = {{"TIDEMARK_DATABASE_URL", db_.url()}, {"TEST_LEDGER_SECRET", kReceiverSecret}};
  options.timeout = 30s;
  const ProcessResult result =
      run_tidemark({"serve", "--config", config, "--listen", "127.0.0.1:" + std::to_string(port)}, options);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("pipelines.transactions.schedule.cron"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("minute"), std::string::npos) << result.err;
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM runs"), "0");
}

TEST_F(ServeProcessTest, AMissingDestinationSecretExits2BeforeAnyRun) {
  const std::string config = write_config(10, 100, "{every: 1h}");
  ProcessOptions options;
  options.env = {{"TIDEMARK_DATABASE_URL", db_.url()}, {"TEST_LEDGER_SECRET", std::nullopt}};
  options.timeout = 30s;
  const ProcessResult result = run_tidemark({"serve", "--config", config, "--listen", "127.0.0.1:0"}, options);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("TEST_LEDGER_SECRET"), std::string::npos) << result.err;
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM runs"), "0");
}

TEST_F(ServeProcessTest, SigtermDuringARunStopsAfterTheBatchInHandAndTheNextRunCompletesTheSource) {
  constexpr int kRecords = 60000;
  const std::string config = write_config(kRecords, 100, "{every: 1h}");  // `every` runs at start-up
  auto serve = start_serve(config, free_port());
  wait_for_batches(5);
  const auto signalled = std::chrono::steady_clock::now();
  serve->kill(SIGTERM);
  const ProcessResult result = serve->wait();
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, 20s);
  const int committed = scalar_int("SELECT COALESCE(sum(input), 0) FROM batch_ledger");
  ASSERT_LT(committed, kRecords) << "the run finished before the signal: make the source larger";
  expect_consistent();

  ProcessOptions options;
  options.env = {{"TIDEMARK_DATABASE_URL", db_.url()}};
  const ProcessResult rerun = run_tidemark({"run", "--pipeline", "transactions", "--config", config}, options);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  expect_consistent();
  EXPECT_EQ(scalar_int("SELECT sum(input) FROM batch_ledger"), kRecords + 2);
  EXPECT_EQ(scalar_int("SELECT count(*) FROM transaction_state"), kRecords);
}

TEST_F(ServeProcessTest, ASecondSignalExitsAtOnceAndLeavesStateConsistent) {
  // Batches of 20000 take long enough for the second signal to land during one.
  const std::string config = write_config(100000, 20000, "{every: 1h}");
  auto serve = start_serve(config, free_port());
  wait_for_batches(1);
  serve->kill(SIGTERM);
  std::this_thread::sleep_for(100ms);  // two signals at once would merge into one
  serve->kill(SIGTERM);
  const ProcessResult result = serve->wait();
  EXPECT_EQ(result.exit_code, 128 + SIGTERM) << result.err;
  // The killed run stays "running" in the runs table (nobody finished it), but the data agree.
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM transaction_state"), db_.scalar("SELECT sum(inserted) FROM batch_ledger"));
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM outbox"), db_.scalar("SELECT sum(inserted + updated) FROM batch_ledger"));
  EXPECT_EQ(db_.scalar("SELECT position FROM checkpoint WHERE pipeline = 'transactions'"),
            db_.scalar("SELECT end_position FROM batch_ledger ORDER BY id DESC LIMIT 1"));
}

TEST_F(ServeProcessTest, TwoServeProcessesOnOneDatabaseNeverRunOnePipelineAtOnce) {
  const std::string config = write_config(8000, 200, "{every: 150ms}");
  auto first = start_serve(config, free_port());
  auto second = start_serve(config, free_port());
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (scalar_int("SELECT count(*) FROM runs WHERE status = 'succeeded'") < 10 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  first->kill(SIGTERM);
  second->kill(SIGTERM);
  EXPECT_EQ(first->wait().exit_code, 0);
  EXPECT_EQ(second->wait().exit_code, 0);
  EXPECT_GE(scalar_int("SELECT count(*) FROM runs WHERE status = 'succeeded'"), 10);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM runs a JOIN runs b ON a.id < b.id "
                       "WHERE a.started_at < b.finished_at AND b.started_at < a.finished_at"),
            "0");
  EXPECT_EQ(scalar_int("SELECT sum(input) FROM batch_ledger"), 8002);  // each record read once
  expect_consistent();
}

}  // namespace
}  // namespace tidemark::testing
