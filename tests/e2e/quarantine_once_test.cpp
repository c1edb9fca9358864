// A quarantined record is released once and keeps one open entry: real tidemark processes
// against a throwaway PostgreSQL. Once, a record released and rejected again, then
// replayed, had two open entries, and more after each release and replay; and
// concurrent releases of one entry, through serve's API or the CLI, could both commit (two
// succeeded runs, each ledger row counting the record) and others answered 500 "already
// running"; now one releases it and each other is refused naming the run that did.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <future>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "tests/support/http_client.hpp"
#include "tests/support/process.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark {
namespace {

using testing::Process;
using testing::ProcessOptions;
using testing::ProcessResult;
using testing::TempDir;
using testing::TestDatabase;
using testing::run_tidemark;
using ::testing::AnyOf;
using ::testing::ContainsRegex;
using namespace std::chrono_literals;

// t1 is stored; t2's amount is not a number, whatever is done to it.
constexpr char kInput[] = "transaction_id,source_revision,amount\nt1,1,1.00\nt2,1,NaN\n";

class QuarantineOnce : public ::testing::Test {
 protected:
  void SetUp() override {
    input_ = dir_.write("in.csv", kInput);
    const ProcessResult loaded = tidemark({"run", "--pipeline", "p", "--source", input_.string()});
    ASSERT_EQ(loaded.exit_code, 0) << loaded.both();
    id_ = db_.scalar("SELECT id FROM quarantine");
  }
  ProcessResult tidemark(std::vector<std::string> args) {
    args.insert(args.end(), {"--database", db_.url()});
    return run_tidemark(args);
  }
  std::string open_entries() { return db_.scalar("SELECT count(*) FROM quarantine WHERE released_at IS NULL"); }
  // What must hold after concurrent releases of entry id_ of which run `run_id` won: one
  // release run with one ledger row, the entry released by it, one new entry, and the
  // ledger's invalid records equal to the quarantine's entries.
  void expect_released_once(const std::string& run_id) {
    const std::string release_runs = "(SELECT id FROM runs WHERE reason = 'quarantine release " + id_ + "')";
    EXPECT_EQ(db_.scalar("SELECT string_agg(id::text, ',') FROM " + release_runs + " r"), run_id);
    EXPECT_EQ(db_.scalar("SELECT status FROM runs WHERE id = " + run_id), "succeeded");
    EXPECT_EQ(db_.scalar("SELECT count(*) FROM batch_ledger WHERE run_id IN " + release_runs), "1");
    EXPECT_EQ(db_.scalar("SELECT release_run_id FROM quarantine WHERE id = " + id_), run_id);
    EXPECT_EQ(db_.scalar("SELECT count(*) FROM quarantine"), "2");
    EXPECT_EQ(open_entries(), "1");
    EXPECT_EQ(db_.scalar("SELECT sum(invalid) FROM batch_ledger"), db_.scalar("SELECT count(*) FROM quarantine"));
  }

  TestDatabase db_;
  TempDir dir_;
  std::filesystem::path input_;
  std::string id_;
};

TEST_F(QuarantineOnce, ARecordKeepsOneOpenEntryThroughReleasesAndReplays) {
  for (int round = 1; round <= 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string open = db_.scalar("SELECT id FROM quarantine WHERE released_at IS NULL ORDER BY id LIMIT 1");
    const ProcessResult released = tidemark({"quarantine", "release", open});
    ASSERT_EQ(released.exit_code, 0) << released.both();
    EXPECT_EQ(open_entries(), "1");
    for (int replay = 1; replay <= 2; ++replay) {
      const ProcessResult replayed = tidemark({"run", "--pipeline", "p", "--source", input_.string(), "--replay"});
      ASSERT_EQ(replayed.exit_code, 0) << replayed.both();
      EXPECT_EQ(open_entries(), "1");
    }
  }
  // The first run's entry and one per release, each closed by the next release.
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM quarantine"), "4");
  EXPECT_EQ(db_.scalar("SELECT count(DISTINCT (source, position, raw)) FROM quarantine"), "1");
}

TEST_F(QuarantineOnce, ConcurrentCliReleasesOfOneEntryReleaseItOnceAndTheOthersNameTheRun) {
  constexpr int kReleases = 8;
  std::vector<std::unique_ptr<Process>> releases;
  for (int i = 0; i < kReleases; ++i) {
    releases.push_back(testing::start_tidemark({"quarantine", "release", id_, "--database", db_.url()}));
  }
  std::vector<ProcessResult> won;
  std::vector<ProcessResult> refused;
  for (auto& release : releases) {
    ProcessResult result = release->wait();
    (result.exit_code == 0 ? won : refused).push_back(std::move(result));
  }
  ASSERT_EQ(won.size(), 1u);
  std::smatch match;
  ASSERT_TRUE(std::regex_search(won[0].out, match, std::regex("released in run ([0-9]+): invalid"))) << won[0].out;
  const std::string run_id = match[1];
  for (const ProcessResult& result : refused) {
    // 2: released already, in that run; 1: that run held the pipeline.
    EXPECT_THAT(result.exit_code, AnyOf(1, 2)) << result.both();
    EXPECT_THAT(result.err, ContainsRegex("run " + run_id + "[ )]")) << result.both();
  }
  expect_released_once(run_id);
}

TEST_F(QuarantineOnce, ConcurrentApiReleasesOfOneEntryAnswerOne200AndOthers409NamingTheRun) {
  const auto config = dir_.write("serve.yaml", "pipelines:\n  p:\n    source: {kind: file, path: " + input_.string() +
                                                   ", format: csv}\n");
  const unsigned short port = testing::free_port();
  ProcessOptions options;
  options.env = {{"TIDEMARK_DATABASE_URL", db_.url()}, {"TIDEMARK_API_TOKEN", std::nullopt}};
  auto serve = testing::start_tidemark(
      {"serve", "--config", config.string(), "--listen", "127.0.0.1:" + std::to_string(port)}, options);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (testing::http_request(port, "GET", "/healthz", {}, "", 1s).status != 200) {
    ASSERT_TRUE(serve->running() && std::chrono::steady_clock::now() < deadline) << serve->wait().err;
    std::this_thread::sleep_for(20ms);
  }

  constexpr int kReleases = 16;
  std::promise<void> go;
  const std::shared_future<void> started = go.get_future().share();
  std::vector<std::future<testing::HttpAnswer>> answers;
  for (int i = 0; i < kReleases; ++i) {
    answers.push_back(std::async(std::launch::async, [&, started] {
      started.wait();
      return testing::http_request(port, "POST", "/v1/quarantine/" + id_ + "/release", {}, "", 30s);
    }));
  }
  go.set_value();
  std::vector<testing::HttpAnswer> won;
  std::vector<testing::HttpAnswer> refused;
  for (auto& answer : answers) {
    testing::HttpAnswer got = answer.get();
    (got.status == 200 ? won : refused).push_back(std::move(got));
  }
  serve->kill(SIGTERM);
  serve->wait();

  ASSERT_EQ(won.size(), 1u);
  const std::string run_id = std::to_string(boost::json::parse(won[0].body).at("run_id").as_int64());
  for (const testing::HttpAnswer& answer : refused) {
    EXPECT_EQ(answer.status, 409) << answer.body;
    EXPECT_THAT(answer.body, ContainsRegex("run " + run_id + "[ )]")) << answer.body;
  }
  expect_released_once(run_id);
}

}  // namespace
}  // namespace tidemark
