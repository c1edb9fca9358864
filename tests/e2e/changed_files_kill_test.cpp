// A run killed (as kill -9 would: a failpoint's _exit(137)) in the middle of reading again a
// large file that was rewritten, then simply run again (docs/sources.md "Files that
// change"): the rerun resumes the file where the killed run's last committed batch left it in
// the registry of files read, and the table and the outbox end as one clean run over each
// version of the file leaves them, no change twice.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/process.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark {
namespace {

using testing::ProcessOptions;
using testing::ProcessResult;
using testing::query_rows;
using testing::Rows;
using testing::TempDir;
using testing::TestDatabase;
using testing::run_tidemark;

constexpr int kFirst = 6000;    // records of the first version
constexpr int kSecond = 8000;   // of the rewritten one: the first's keys, then new ones
constexpr int kBatchSize = 250;

std::string key(int i) { return "k" + std::to_string(100000 + i); }

// Every key of the first version at revision 1; the rewrite raises every third to revision 2
// with another amount and adds keys of its own.
std::string version(int records, bool rewritten) {
  std::string text = "transaction_id,source_revision,amount,account_id\n";
  for (int i = 0; i < records; ++i) {
    const bool raised = rewritten && i % 3 == 0;
    text += key(i) + "," + (raised ? "2" : "1") + "," + std::to_string(i) + (raised ? ".50" : ".00") + ",acct\n";
  }
  return text;
}

// The folder `in` of `dir`, with a destination so that each change is an outbox row (the
// relay never runs: the rows stay there to be counted).
std::filesystem::path write_config(const TempDir& dir) {
  std::filesystem::create_directory(dir.path() / "in");
  return dir.write("tidemark.yaml", "pipelines:\n"
                                    "  big:\n"
                                    "    source: {kind: file, path: " + (dir.path() / "in").string() + ", format: csv}\n"
                                    "    batch_size: " + std::to_string(kBatchSize) + "\n"
                                    "    destinations:\n"
                                    "      - {name: hook, kind: http, url: http://127.0.0.1:9/, secret_env: HOOK_SECRET}\n");
}

ProcessResult run(const TestDatabase& db, const std::filesystem::path& config, const std::string& failpoints = "") {
  ProcessOptions options;
  if (!failpoints.empty()) options.env["TIDEMARK_FAILPOINTS"] = failpoints;
  return run_tidemark({"run", "--pipeline", "big", "--config", config.string(), "--database", db.url(), "--json"},
                      options);
}

boost::json::object summary(const ProcessResult& result) {
  std::string out = result.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return boost::json::parse(out.substr(out.rfind('\n') + 1)).as_object();
}

TEST(ChangedFilesKill, ARunKilledWhileReadingARewrittenFileAgainIsResumedFromTheRegistryAndAppliesNothingTwice) {
  TestDatabase db;
  TempDir dir;
  const auto config = write_config(dir);
  dir.write("in/big.csv", version(kFirst, false));
  ASSERT_EQ(run(db, config).exit_code, 0);

  // Rewritten in place: read again from its start, and killed after its 5th batch committed.
  std::ofstream(dir.path() / "in" / "big.csv", std::ios::binary | std::ios::trunc) << version(kSecond, true);
  const ProcessResult killed = run(db, config, "after_commit:5");
  ASSERT_EQ(killed.exit_code, 137) << killed.err;
  EXPECT_THAT(killed.err, ::testing::HasSubstr("file 'big.csv'"));
  EXPECT_EQ(db.scalar("SELECT bytes < " + std::to_string(version(kSecond, true).size()) +
                      " FROM tidemark_source_files WHERE file = 'big.csv'"),
            "t");

  // The rerun is not told the file changed again: the registry already describes the new
  // content up to the killed run's last committed batch, and it reads on from there.
  const ProcessResult rerun = run(db, config);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  const boost::json::object done = summary(rerun);
  EXPECT_TRUE(done.at("rewritten_files").as_array().empty());
  EXPECT_EQ(done.at("input").as_int64(), kSecond - 5 * kBatchSize);

  // One clean run over each version: every key at its highest revision...
  Rows expected;
  for (int i = 0; i < kSecond; ++i) {
    const bool raised = i % 3 == 0;
    expected.push_back({key(i), raised ? "2" : "1", std::to_string(i) + (raised ? ".50" : ".00")});
  }
  EXPECT_EQ(query_rows(db, "SELECT transaction_id, source_revision, amount FROM transaction_state ORDER BY 1"),
            expected);
  // ...and each change once in the outbox: the first load, its keys raised, the new keys.
  const int raised = (kFirst + 2) / 3;
  EXPECT_EQ(db.scalar("SELECT count(*) FROM outbox"), std::to_string(kFirst + raised + (kSecond - kFirst)));
  EXPECT_EQ(query_rows(db, "SELECT payload->>'transaction_id', payload->>'source_revision' FROM outbox GROUP BY 1, 2 "
                           "HAVING count(*) > 1"),
            Rows{});
}

}  // namespace
}  // namespace tidemark
