// The tidemark command line as users and cron see it (docs/cli.md): help texts, exit
// codes 0/1/2 with messages that name the thing at fault, the --json summary, one active
// run per pipeline, and the embedded database commands.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <pqxx/pqxx>

#include "pipeline/cluster/cluster.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark {
namespace {

using namespace std::chrono_literals;
using testing::ProcessOptions;
using testing::ProcessResult;
using testing::TestDatabase;
using testing::run_tidemark;
using testing::start_tidemark;
using ::testing::HasSubstr;
using ::testing::Not;

// A private temporary folder per test, removed afterwards.
class TempFolder {
 public:
  TempFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tidemark-cli-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
    return path_ / name;
  }

 private:
  std::filesystem::path path_;
};

std::string last_line(const std::string& text) {
  std::string trimmed = text;
  while (!trimmed.empty() && trimmed.back() == '\n') trimmed.pop_back();
  const auto newline = trimmed.rfind('\n');
  return newline == std::string::npos ? trimmed : trimmed.substr(newline + 1);
}

// --- help -----------------------------------------------------------------------------

struct HelpCase {
  std::vector<std::string> args;
  std::vector<std::string> mentions;  // what the help must say about the command
};

class HelpText : public ::testing::TestWithParam<HelpCase> {};

TEST_P(HelpText, ExitsZeroAndDescribesTheCommand) {
  const HelpCase& help = GetParam();
  std::vector<std::string> args = help.args;
  args.push_back("--help");
  const ProcessResult result = run_tidemark(args);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("Usage"));
  for (const auto& mention : help.mentions) EXPECT_THAT(result.out, HasSubstr(mention));
}

INSTANTIATE_TEST_SUITE_P(
    Commands, HelpText,
    ::testing::Values(
        HelpCase{{}, {"exactly once", "run", "migrate", "quarantine", "relay", "outbox", "db", "retention"}},
        HelpCase{{"run"},
                 {"checkpoint", "--pipeline", "--config", "--database", "--source", "--format", "--batch-size",
                  "--replay", "--json", "Exit 0"}},
        HelpCase{{"migrate"}, {"migrations", "--database", "--config"}},
        HelpCase{{"quarantine"}, {"quarantined", "list", "show", "release"}},
        HelpCase{{"quarantine", "list"}, {"List quarantined", "--pipeline", "--limit", "--all"}},
        HelpCase{{"quarantine", "show"}, {"raw", "ID"}},
        HelpCase{{"quarantine", "release"}, {"Validate a quarantined record again", "ID", "--config"}},
        HelpCase{{"relay"}, {"Deliver outbox events", "--once", "--config"}},
        HelpCase{{"outbox"}, {"outbox events", "list", "retry"}},
        HelpCase{{"outbox", "list"}, {"--status", "--destination"}},
        HelpCase{{"outbox", "retry"}, {"--all-dead", "ID"}},
        HelpCase{{"db"}, {"embedded PostgreSQL", "start", "stop", "status", "url"}},
        HelpCase{{"db", "start"}, {"start"}},
        HelpCase{{"db", "stop"}, {"Stop"}},
        HelpCase{{"db", "status"}, {"exit 0 running"}},
        HelpCase{{"db", "url"}, {"URL"}},
        HelpCase{{"retention"}, {"retention:", "run"}},
        HelpCase{{"retention", "run"}, {"in chunks", "--dry-run", "--config", "--database"}}),
    [](const auto& info) {
      std::string name;
      for (const auto& word : info.param.args) name += word + "_";
      return name.empty() ? std::string("tidemark") : name.substr(0, name.size() - 1);
    });

// --- usage and configuration errors: exit 2 -------------------------------------------

TEST(CliUsage, NoCommandExitsTwo) {
  const ProcessResult result = run_tidemark({});
  EXPECT_EQ(result.exit_code, 2);
}

TEST(CliUsage, UnknownOptionExitsTwoNamingIt) {
  const ProcessResult result = run_tidemark({"run", "--pipeline", "p", "--source", "x.csv", "--frobnicate"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.out + result.err, HasSubstr("--frobnicate"));
}

// docs/cli.md "Exit codes": every error message names the thing at fault.
TEST(CliUsage, UnknownCommandExitsTwoNamingIt) {
  const ProcessResult result = run_tidemark({"frobnicate"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.out + result.err, HasSubstr("frobnicate"));
}

// The same after global options, with their values in either spelling.
TEST(CliUsage, UnknownCommandAfterGlobalOptionsExitsTwoNamingIt) {
  for (const std::vector<std::string>& arguments :
       {std::vector<std::string>{"--log-level", "info", "frobnicate"},
        std::vector<std::string>{"--log-format=json", "--log-level", "warn", "frobnicate", "--help"}}) {
    const ProcessResult result = run_tidemark(arguments);
    EXPECT_EQ(result.exit_code, 2) << arguments.front();
    EXPECT_THAT(result.out + result.err, HasSubstr("unknown command 'frobnicate'")) << arguments.front();
  }
}

TEST(CliUsage, RunWithoutSourceOrConfigExitsTwoNamingSource) {
  const ProcessResult result = run_tidemark({"run", "--pipeline", "p"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("--source"));
}

TEST(CliUsage, BatchSizeZeroExitsTwoNamingTheOption) {
  const ProcessResult result = run_tidemark({"run", "--pipeline", "p", "--source", "x.csv", "--batch-size", "0"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.out + result.err, HasSubstr("--batch-size"));
}

// A count option's bad value is named with the rule in plain words, before any database is
// looked for, not with CLI11's floating-point range ("Value 0 not in range 0.000000 to 1.79…").
TEST(CliUsage, BadCountsExitTwoWithAPlainMessage) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"quarantine", "list", "--limit", "0"}, "--limit: expected a whole number from 1 to 2147483647, got \"0\""},
      {{"quarantine", "list", "--limit", "-5"}, "--limit: expected a whole number from 1 to 2147483647, got \"-5\""},
      {{"quarantine", "list", "--limit", "ten"}, "--limit: expected a whole number from 1 to 2147483647, got \"ten\""},
      {{"outbox", "list", "--limit", "1.5"}, "--limit: expected a whole number from 1 to 2147483647, got \"1.5\""},
      {{"views", "drop", "account_balance", "--version", "0"},
       "--version: expected a whole number from 1 to 2147483647, got \"0\""},
  };
  for (const auto& [args, message] : cases) {
    const ProcessResult result = run_tidemark(args);
    EXPECT_EQ(result.exit_code, 2) << args[0];
    EXPECT_THAT(result.err, HasSubstr(message)) << result.err;
    EXPECT_THAT(result.err, Not(HasSubstr("not in range"))) << result.err;
  }
}

TEST(CliUsage, ConfigWithUnknownKeyExitsTwoNamingFileLineAndKey) {
  TempFolder folder;
  const auto config = folder.write("tidemark.yaml",
                                   "pipelines:\n"
                                   "  p:\n"
                                   "    source: {kind: file, path: in.csv, format: csv}\n"
                                   "    batch_sise: 100\n");
  const ProcessResult result = run_tidemark({"run", "--pipeline", "p", "--config", config.string()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr(config.string() + ":4"));
  EXPECT_THAT(result.err, HasSubstr("batch_sise"));
}

TEST(CliUsage, PipelineMissingFromConfigExitsTwoNamingIt) {
  TempFolder folder;
  const auto config = folder.write("tidemark.yaml",
                                   "pipelines:\n"
                                   "  p:\n"
                                   "    source: {kind: file, path: in.csv, format: csv}\n");
  const ProcessResult result = run_tidemark({"run", "--pipeline", "elsewhere", "--config", config.string()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("elsewhere"));
}

// --- run failures: exit 1 -------------------------------------------------------------

TEST(CliRun, MissingSourceFileExitsOneNamingThePath) {
  TestDatabase db;
  TempFolder folder;
  const std::string missing = (folder.path() / "missing.csv").string();
  const ProcessResult result = run_tidemark({"run", "--pipeline", "p", "--source", missing, "--database", db.url()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr(missing));
}

TEST(CliRun, UnreachableDatabaseExitsOneAfterBoundedRetries) {
  TempFolder folder;
  const auto source = folder.write("in.csv", "transaction_id,source_revision,amount\na,1,1.00\n");
  const auto started = std::chrono::steady_clock::now();
  const ProcessResult result = run_tidemark(
      {"run", "--pipeline", "p", "--source", source.string(), "--database", "postgresql://nobody@127.0.0.1:1/none"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("database"));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 60s);
}

// --- the --json summary ---------------------------------------------------------------

TEST(CliRun, JsonSummaryIsTheLastStdoutLineAndReconciles) {
  TestDatabase db;
  TempFolder folder;
  const auto source = folder.write("in.csv",
                                   "transaction_id,source_revision,amount,account_id,occurred_at\n"
                                   "a,1,10.00,x,\n"
                                   "a,2,11.00,x,2024-05-01T10:00:00Z\n"  // a,1 superseded; a,2 inserted
                                   "b,1,5.0,,\n"                          // inserted
                                   "b,1,5.00,,\n"                         // duplicate (130.0 = 130.00)
                                   "c,1,NaN,,\n"                          // invalid
                                   "d,1,1.00,,\n"
                                   "d,1,2.00,,\n");                       // both conflict
  const ProcessResult result =
      run_tidemark({"run", "--pipeline", "p", "--source", source.string(), "--database", db.url(), "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const boost::json::object summary = boost::json::parse(last_line(result.out)).as_object();

  std::set<std::string> keys;
  for (const auto& field : summary) keys.insert(std::string(field.key()));
  EXPECT_EQ(keys, (std::set<std::string>{"pipeline", "run_id", "batches", "input", "inserted", "updated", "unchanged",
                                         "stale", "superseded", "duplicate", "invalid", "conflict", "checkpoint",
                                         "pending_tail_bytes", "rewritten_files"}));
  std::int64_t sum = 0;
  for (const char* outcome :
       {"inserted", "updated", "unchanged", "stale", "superseded", "duplicate", "invalid", "conflict"}) {
    sum += summary.at(outcome).to_number<std::int64_t>();
  }
  EXPECT_EQ(summary.at("input").to_number<std::int64_t>(), sum);
  EXPECT_EQ(summary.at("input").to_number<std::int64_t>(), 7);
  EXPECT_EQ(summary.at("inserted").to_number<std::int64_t>(), 2);
  EXPECT_EQ(summary.at("superseded").to_number<std::int64_t>(), 1);
  EXPECT_EQ(summary.at("duplicate").to_number<std::int64_t>(), 1);
  EXPECT_EQ(summary.at("invalid").to_number<std::int64_t>(), 1);
  EXPECT_EQ(summary.at("conflict").to_number<std::int64_t>(), 2);
  EXPECT_EQ(summary.at("pipeline").as_string(), "p");
  EXPECT_EQ(summary.at("batches").to_number<std::int64_t>(), 1);
  EXPECT_EQ(summary.at("checkpoint").as_string(), "in.csv:" + std::to_string(std::filesystem::file_size(source)));
  EXPECT_EQ(std::to_string(summary.at("run_id").to_number<std::int64_t>()),
            db.scalar("SELECT max(run_id) FROM batch_ledger"));
  EXPECT_EQ(db.scalar("SELECT sum(input) FROM batch_ledger"), "7");
  EXPECT_EQ(summary.at("pending_tail_bytes").to_number<std::int64_t>(), 0);
}

// A config for pipeline p reading `source`, with `extra` lines appended to the pipeline.
std::filesystem::path pipeline_config(const TempFolder& folder, const std::filesystem::path& source,
                                      const std::string& source_extra, const std::string& extra = "") {
  return folder.write("tidemark.yaml", "pipelines:\n  p:\n    source: {path: " + source.string() + source_extra +
                                           "}\n" + extra);
}

TEST(CliRun, JsonSummaryReportsAPendingLastLine) {
  TestDatabase db;
  TempFolder folder;
  const std::string done = "transaction_id,source_revision,account_id,amount\nW-1,1,ACC-W,10.00\n";
  const auto source = folder.write("in.csv", done + "W-2,1,ACC-W,12");  // being written
  const auto config = pipeline_config(folder, source, ", settle: 1h");
  const ProcessResult result =
      run_tidemark({"run", "--pipeline", "p", "--config", config.string(), "--database", db.url(), "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const boost::json::object summary = boost::json::parse(last_line(result.out)).as_object();
  EXPECT_EQ(summary.at("pending_tail_bytes").to_number<std::int64_t>(), 14);
  EXPECT_EQ(summary.at("inserted").to_number<std::int64_t>(), 1);
  EXPECT_EQ(summary.at("checkpoint").as_string(), "in.csv:" + std::to_string(done.size()));
  EXPECT_THAT(result.err, HasSubstr("without a newline (14 bytes"));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM transaction_state"), "1");
}

TEST(CliRun, UnusableFileExitsOneNamingTheFileAndTheMissingColumns) {
  TestDatabase db;
  TempFolder folder;
  const auto source = folder.write("in.csv", "transaction_id,amount\na,1.00\nb,2.00\n");
  const ProcessResult result =
      run_tidemark({"run", "--pipeline", "p", "--source", source.string(), "--database", db.url()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("in.csv"));
  EXPECT_THAT(result.err, HasSubstr("lacks required column(s) source_revision"));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM checkpoint"), "0");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM quarantine"), "0");

  const auto jsonl = folder.write("in.jsonl", [] {
    std::string text = "transaction_id,source_revision,amount\n";
    for (int i = 0; i < 120; ++i) text += "t" + std::to_string(i) + ",1,1.00\n";
    return text;
  }());
  const ProcessResult wrong_format =
      run_tidemark({"run", "--pipeline", "q", "--source", jsonl.string(), "--database", db.url()});
  EXPECT_EQ(wrong_format.exit_code, 1);
  EXPECT_THAT(wrong_format.err, HasSubstr("in.jsonl"));
  EXPECT_THAT(wrong_format.err, HasSubstr("fail to decode as jsonl"));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM checkpoint"), "0");
}

TEST(CliRun, MaxRejectedExitsOneNamingTheThreshold) {
  TestDatabase db;
  TempFolder folder;
  const auto source = folder.write("in.csv",
                                   "transaction_id,source_revision,amount\n"
                                   "a,1,1.00\nb,1,NaN\nc,1,NaN\nd,1,4.00\n");
  const std::vector<std::string> args = {"run", "--pipeline", "p", "--source", source.string(), "--database", db.url(),
                                         "--batch-size", "2"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> all = args;
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  };
  const ProcessResult bad_value = run_tidemark(with({"--max-rejected", "ten"}));
  EXPECT_EQ(bad_value.exit_code, 2);
  EXPECT_THAT(bad_value.err, HasSubstr("--max-rejected"));

  const ProcessResult result = run_tidemark(with({"--max-rejected", "1"}));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("max_rejected 1"));
  EXPECT_THAT(result.err, HasSubstr("2 invalid + 0 conflict = 2 of 4 input"));
  // Batch 1 (a, b) committed; batch 2 (c, d) crossed the threshold and rolled back.
  EXPECT_EQ(db.scalar("SELECT position FROM checkpoint"), db.scalar("SELECT end_position FROM batch_ledger"));
  EXPECT_EQ(db.scalar("SELECT string_agg(transaction_id, ',') FROM transaction_state"), "a");

  // From the config, as a percentage: 2 of 4 is 50%.
  const auto config = pipeline_config(folder, source, "", "    max_rejected: 50%\n");
  const ProcessResult within = run_tidemark(
      {"run", "--pipeline", "p", "--config", config.string(), "--database", db.url(), "--batch-size", "2"});
  EXPECT_EQ(within.exit_code, 0) << within.err;
  EXPECT_EQ(db.scalar("SELECT string_agg(transaction_id, ',' ORDER BY 1) FROM transaction_state"), "a,d");
}

// --- one active run per pipeline ------------------------------------------------------

std::string pipeline_lock_sql(const std::string& function, const std::string& pipeline) {
  return "SELECT " + function + "(hashtextextended('tidemark pipeline ' || '" + pipeline + "', 0))";
}

TEST(CliRun, PipelineLockedByAnotherSessionExitsOneSayingWhoHoldsIt) {
  TestDatabase db;
  TempFolder folder;
  const auto source = folder.write("in.csv", "transaction_id,source_revision,amount\na,1,1.00\n");
  auto holder = db.connect();
  std::string holder_pid;
  {
    pqxx::nontransaction txn(*holder);
    txn.exec(pipeline_lock_sql("pg_advisory_lock", "p"));
    holder_pid = txn.exec("SELECT pg_backend_pid()")[0][0].c_str();
  }
  const std::vector<std::string> args = {"run", "--pipeline", "p", "--source", source.string(), "--database", db.url()};
  const ProcessResult refused = run_tidemark(args);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("already running"));
  EXPECT_THAT(refused.err, HasSubstr("backend pid " + holder_pid));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM batch_ledger"), "0");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM transaction_state"), "0");

  {
    pqxx::nontransaction txn(*holder);
    txn.exec(pipeline_lock_sql("pg_advisory_unlock", "p"));
  }
  const ProcessResult after = run_tidemark(args);
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(db.scalar("SELECT count(*) FROM transaction_state"), "1");
}

// Two real processes: the first holds the pipeline while it loads a long source in small
// batches; the second is refused and names the first; the first then completes normally.
// (A FIFO held the first run here once: a file source now refuses one at once.)
TEST(CliRun, SecondConcurrentRunOfThePipelineExitsOneNamingTheFirstProcess) {
  TestDatabase db;
  TempFolder folder;
  constexpr int kRecords = 200000;
  std::string csv = "transaction_id,source_revision,amount\n";
  for (int i = 0; i < kRecords; ++i) csv += "t" + std::to_string(i) + ",1,1.00\n";
  const auto source = folder.write("in.csv", csv);
  const std::vector<std::string> args = {"run",      "--pipeline", "p",          "--source", source.string(),
                                         "--database", db.url(),   "--batch-size", "100"};
  auto first = start_tidemark(args);

  // Its first batch has committed: it holds the pipeline, with most of the source still ahead.
  bool running = false;
  for (int i = 0; i < 600 && !running && first->running(); ++i) {
    running = db.scalar("SELECT count(*) FROM batch_ledger") != "0";
    if (!running) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(running) << "the first run never committed a batch";

  const ProcessResult second = run_tidemark(args);
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_THAT(second.err, HasSubstr("already running"));
  EXPECT_THAT(second.err, HasSubstr("tidemark pid " + std::to_string(first->pid())));

  const ProcessResult completed = first->wait();
  EXPECT_EQ(completed.exit_code, 0) << completed.err;
  EXPECT_EQ(db.scalar("SELECT count(*) FROM transaction_state"), std::to_string(kRecords));
  EXPECT_EQ(db.scalar("SELECT sum(input) FROM batch_ledger"), std::to_string(kRecords));
}

TEST(CliRun, SigtermCommitsTheBatchInHandRecordsTheRunStoppedAndTheNextRunCompletesTheSource) {
  TestDatabase db;
  TempFolder folder;
  constexpr int kRecords = 60000;
  std::string csv = "transaction_id,source_revision,amount\n";
  for (int i = 0; i < kRecords; ++i) csv += "t" + std::to_string(i) + ",1,1.00\n";
  const auto source = folder.write("in.csv", csv);
  const std::vector<std::string> args = {"run",           "--pipeline", "p", "--source", source.string(),
                                         "--batch-size", "100",        "--database", db.url()};
  auto run = start_tidemark(args);
  for (int i = 0; i < 1200 && db.scalar("SELECT count(*) FROM pg_tables WHERE tablename = 'batch_ledger'") == "0"; ++i) {
    std::this_thread::sleep_for(50ms);
  }
  for (int i = 0; i < 1200 && std::stoi(db.scalar("SELECT count(*) FROM batch_ledger")) < 5; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  run->kill(SIGTERM);
  const ProcessResult stopped = run->wait();
  EXPECT_EQ(stopped.exit_code, 128 + SIGTERM) << stopped.err;
  EXPECT_THAT(stopped.out, HasSubstr("stopped by a signal before the source's end"));
  const int committed = std::stoi(db.scalar("SELECT sum(input) FROM batch_ledger"));
  ASSERT_LT(committed, kRecords) << "the run finished before the signal: make the source larger";
  EXPECT_EQ(db.scalar("SELECT status FROM runs ORDER BY id DESC LIMIT 1"), "stopped");
  // What committed is whole: state, ledger and checkpoint agree.
  EXPECT_EQ(db.scalar("SELECT count(*) FROM transaction_state"), std::to_string(committed));
  EXPECT_EQ(db.scalar("SELECT position FROM checkpoint WHERE pipeline = 'p'"),
            db.scalar("SELECT end_position FROM batch_ledger ORDER BY id DESC LIMIT 1"));

  const ProcessResult rerun = run_tidemark(args);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_EQ(db.scalar("SELECT count(*) FROM transaction_state"), std::to_string(kRecords));
  EXPECT_EQ(db.scalar("SELECT sum(input) FROM batch_ledger"), std::to_string(kRecords));
}

// --- the embedded database ------------------------------------------------------------

TEST(CliDb, StartStatusUrlStopManageTheClusterUnderTidemarkHome) {
  TempFolder home;
  // Removes the cluster (data folder included, wherever it was placed) even when a check fails.
  struct Cleanup {
    std::filesystem::path home;
    ~Cleanup() {
      try {
        pipeline::cluster::Cluster(home).destroy();
      } catch (const std::exception&) {
      }
    }
  } cleanup{home.path()};
  ProcessOptions options;
  options.env["TIDEMARK_HOME"] = home.path().string();

  EXPECT_EQ(run_tidemark({"db", "status"}, options).exit_code, 2) << "no cluster yet";
  const ProcessResult start = run_tidemark({"db", "start"}, options);
  ASSERT_EQ(start.exit_code, 0) << start.err;
  const ProcessResult status = run_tidemark({"db", "status"}, options);
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;

  const ProcessResult url = run_tidemark({"db", "url"}, options);
  ASSERT_EQ(url.exit_code, 0) << url.err;
  const std::string address = last_line(url.out);
  EXPECT_THAT(address, ::testing::StartsWith("postgresql://"));
  {
    pqxx::connection connection(address);
    pqxx::nontransaction txn(connection);
    EXPECT_EQ(txn.exec("SELECT 1 + 1")[0][0].as<int>(), 2);
    EXPECT_EQ(std::string(txn.exec("SELECT host(inet_server_addr())")[0][0].c_str()), "127.0.0.1")
        << "the embedded cluster listens on loopback only";
  }

  const ProcessResult stop = run_tidemark({"db", "stop"}, options);
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(run_tidemark({"db", "status"}, options).exit_code, 1);
}

// docs/cli.md "Logs": log timestamps are UTC with the Z suffix (2026-12-01T06:00:00.123Z), whatever
// the machine's time zone. TZ is a POSIX rule (no tzdata needed): nine hours east of UTC.
TEST(CliLogs, TimestampsAreUtcWithTheZSuffixWhateverTheTimeZone) {
  const auto utc_hour = [] {
    const std::time_t now = std::time(nullptr);
    std::tm parts{};
    gmtime_r(&now, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H", &parts);
    return std::string(text);
  };
  const std::string before = utc_hour();
  ProcessOptions options;
  options.env["TZ"] = "JST-9";
  options.env["TIDEMARK_HOME"] = (std::filesystem::temp_directory_path() / "tidemark-no-such-home").string();
  const ProcessResult result = run_tidemark({"quarantine", "list"}, options);  // logs one error line
  const std::string after = utc_hour();
  ASSERT_FALSE(result.err.empty());
  EXPECT_THAT(result.err, ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "
                                                  "(.|\n)*"));
  const std::string hour = result.err.substr(0, 13);
  EXPECT_TRUE(hour == before || hour == after) << result.err << " (UTC hour " << before << ")";
}

}  // namespace
}  // namespace tidemark
