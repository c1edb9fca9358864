// The end-to-end proof of docs/rules.md rules 6, 7 and 10: a `tidemark run` killed at a
// failpoint (as kill -9 would) and then simply run again leaves the state, the outbox, the
// quarantine, the ledger and the checkpoint exactly where one clean run leaves them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <pqxx/pqxx>

#include "tests/support/process.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark {
namespace {

using testing::ProcessOptions;
using testing::ProcessResult;
using testing::TestDatabase;
using testing::run_tidemark;

constexpr std::uint64_t kSeed = 20240611;
constexpr int kRecords = 3000;
constexpr int kBatchSize = 100;
constexpr int kBatches = kRecords / kBatchSize;
constexpr char kPipeline[] = "failpoints";
constexpr char kOutcomes[][11] = {"inserted", "updated", "unchanged", "stale",
                                  "superseded", "duplicate", "invalid", "conflict"};

// A CSV source that exercises every outcome: new keys, newer revisions (in the same batch
// and in later ones), stale revisions, exact duplicates (near: same batch; far: a later
// batch, so unchanged or stale), same-revision conflicts and invalid records of several kinds.
std::string generate_source(std::uint64_t seed) {
  std::mt19937_64 random(seed);
  const auto uniform = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(random); };
  struct Version {
    std::int64_t revision;
    std::string line;
  };
  std::vector<std::string> keys;
  std::map<std::string, std::vector<Version>> versions;  // by key, in emission order
  std::vector<std::string> lines;

  const auto amount = [&] {
    return std::to_string(uniform(-99999, 999999)) + "." + std::to_string(uniform(0, 9)) + std::to_string(uniform(0, 9));
  };
  const auto account_of = [](const std::string& key) {
    // Quoted, with an embedded comma, for some accounts; empty (absent) for some keys.
    const int n = std::stoi(key.substr(1)) % 23;
    if (n == 0) return std::string();
    return n % 5 == 0 ? "\"acct," + std::to_string(n) + "\"" : "acct-" + std::to_string(n);
  };
  const auto version_line = [&](const std::string& key, std::int64_t revision) {
    const std::string occurred = uniform(0, 3) == 0 ? "" : "2024-05-" + std::to_string(10 + uniform(0, 9)) + "T08:30:00+02:00";
    return key + "," + std::to_string(revision) + "," + amount() + "," + account_of(key) + "," + occurred;
  };
  const auto emit = [&](const std::string& key, std::int64_t revision, std::string line) {
    versions[key].push_back({revision, line});
    lines.push_back(std::move(line));
  };
  const auto max_revision = [&](const std::string& key) {
    std::int64_t top = 0;
    for (const auto& version : versions[key]) top = std::max(top, version.revision);
    return top;
  };
  // A key emitted recently (likely in the same batch) or any time before.
  const auto some_key = [&](bool recent) {
    const int size = static_cast<int>(keys.size());
    return keys[static_cast<std::size_t>(recent ? uniform(std::max(0, size - 40), size - 1) : uniform(0, size - 1))];
  };
  const std::vector<std::string> invalid_lines = {
      "t-bad-nan,1,NaN,acct-1,",
      "t-bad-exp,1,1e3,acct-1,",
      "t-bad-frac,1,130.001,acct-1,",
      "t-bad-big,1,10000000000.00,acct-1,",
      "t-bad-rev,-1,5.00,acct-1,",
      "t-bad-revtext,two,5.00,acct-1,",
      ",1,5.00,acct-1,",
      "t-bad-columns,1,5.00",
      "t-bad-time,1,5.00,acct-1,yesterday",
  };

  lines.push_back("transaction_id,source_revision,amount,account_id,occurred_at");
  while (static_cast<int>(lines.size()) <= kRecords) {
    const int kind = keys.size() < 20 ? 0 : uniform(0, 99);
    if (kind < 35) {  // a new key
      const std::string key = "t" + std::to_string(100000 + keys.size());
      keys.push_back(key);
      const std::int64_t revision = uniform(0, 3);
      emit(key, revision, version_line(key, revision));
    } else if (kind < 52) {  // a newer revision, of a recent key half of the time
      const std::string key = some_key(uniform(0, 1) == 0);
      const std::int64_t revision = max_revision(key) + uniform(1, 2);
      emit(key, revision, version_line(key, revision));
    } else if (kind < 60) {  // an older revision again, exactly as first sent
      const std::string key = some_key(false);
      const auto& history = versions[key];
      lines.push_back(history[static_cast<std::size_t>(uniform(0, static_cast<int>(history.size()) - 1))].line);
    } else if (kind < 72) {  // an exact duplicate of a recent record
      lines.push_back(lines[static_cast<std::size_t>(uniform(std::max(1, static_cast<int>(lines.size()) - 30),
                                                             static_cast<int>(lines.size()) - 1))]);
    } else if (kind < 80) {  // an exact duplicate from anywhere before
      lines.push_back(lines[static_cast<std::size_t>(uniform(1, static_cast<int>(lines.size()) - 1))]);
    } else if (kind < 90) {  // same key and revision, another payload: a conflict
      const std::string key = some_key(uniform(0, 1) == 0);
      const auto& history = versions[key];
      const std::int64_t revision = history[static_cast<std::size_t>(uniform(0, static_cast<int>(history.size()) - 1))].revision;
      emit(key, revision, version_line(key, revision));
    } else {  // invalid
      lines.push_back(invalid_lines[static_cast<std::size_t>(uniform(0, static_cast<int>(invalid_lines.size()) - 1))]);
    }
  }
  std::string text;
  for (const auto& line : lines) text += line + (uniform(0, 9) == 0 ? "\r\n" : "\n");
  return text;
}

// Everything a run leaves behind that must not depend on how often it was killed: each
// table as ordered rows of text, without ids and timestamps.
struct Snapshot {
  std::vector<std::string> state;
  std::vector<std::string> outbox;
  std::vector<std::string> quarantine;
  std::vector<std::string> sequences;
  std::map<std::string, std::int64_t> ledger;  // sums of input and each outcome, and "batches"
  std::string checkpoint;
};

std::vector<std::string> rows(pqxx::work& txn, const std::string& query) {
  std::vector<std::string> out;
  for (const auto& row : txn.exec(query)) out.emplace_back(row[0].c_str());
  return out;
}

Snapshot snapshot(const TestDatabase& db) {
  auto connection = db.connect();
  pqxx::work txn(*connection);
  Snapshot s;
  s.state = rows(txn, "SELECT (to_jsonb(t) - 'created_at' - 'updated_at')::text FROM transaction_state t "
                      "ORDER BY transaction_id");
  s.outbox = rows(txn,
                  "SELECT jsonb_build_object('destination', destination, 'idempotency_key', idempotency_key, "
                  "'partition_key', partition_key, 'sequence', sequence, 'payload', payload, 'status', status, "
                  "'attempts', attempts)::text FROM outbox ORDER BY idempotency_key");
  // In insertion order; ids themselves may have gaps where a killed transaction took some.
  s.quarantine = rows(txn,
                      "SELECT jsonb_build_array(pipeline, reason, detail, transaction_id, source_revision, raw, "
                      "raw_bytes, format, decode_context, position, released_at)::text FROM quarantine ORDER BY id");
  s.sequences = rows(txn, "SELECT partition_key || '=' || last_sequence FROM tidemark_partition_sequence ORDER BY 1");
  const auto ledger = txn.exec(
      "SELECT count(*), COALESCE(sum(input), 0), COALESCE(sum(inserted), 0), COALESCE(sum(updated), 0), "
      "COALESCE(sum(unchanged), 0), COALESCE(sum(stale), 0), COALESCE(sum(superseded), 0), "
      "COALESCE(sum(duplicate), 0), COALESCE(sum(invalid), 0), COALESCE(sum(conflict), 0) FROM batch_ledger");
  s.ledger["batches"] = ledger[0][0].as<std::int64_t>();
  s.ledger["input"] = ledger[0][1].as<std::int64_t>();
  for (int i = 0; i < 8; ++i) s.ledger[kOutcomes[i]] = ledger[0][i + 2].as<std::int64_t>();
  s.checkpoint = db.scalar("SELECT source || ' ' || position FROM checkpoint");
  return s;
}

class FailpointEndToEnd : public ::testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  static void SetUpTestSuite() {
    std::cout << "failpoint source seed: " << kSeed << std::endl;
    folder_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                        ("tidemark-failpoint-e2e-" + std::to_string(getpid())));
    std::filesystem::create_directories(*folder_);
    std::ofstream(source_path()) << generate_source(kSeed);
    std::ofstream(config_path()) << "pipelines:\n"
                                 << "  " << kPipeline << ":\n"
                                 << "    source: {kind: file, path: " << source_path().string() << ", format: csv}\n"
                                 << "    batch_size: " << kBatchSize << "\n"
                                 << "    destinations:\n"
                                 << "      - {name: ledger, kind: http, url: http://127.0.0.1:9/x, secret_env: SOME_VAR}\n"
                                 << "      - {name: audit, kind: http, url: http://127.0.0.1:9/x, secret_env: SOME_VAR}\n";
    clean_db_ = new TestDatabase();
    const ProcessResult clean = run(*clean_db_, {});
    ASSERT_EQ(clean.exit_code, 0) << clean.err;
    clean_ = new Snapshot(snapshot(*clean_db_));
  }
  static void TearDownTestSuite() {
    // The TEST_F and TEST_P tests are two suites: each sets up (and runs clean) once.
    delete clean_;
    clean_ = nullptr;
    delete clean_db_;
    clean_db_ = nullptr;
    std::filesystem::remove_all(*folder_);
    delete folder_;
    folder_ = nullptr;
  }

  static std::filesystem::path source_path() { return *folder_ / "source.csv"; }
  static std::filesystem::path config_path() { return *folder_ / "tidemark.yaml"; }

  static ProcessResult run(const TestDatabase& db, const std::optional<std::string>& failpoints) {
    ProcessOptions options;
    if (failpoints) options.env["TIDEMARK_FAILPOINTS"] = *failpoints;
    const ProcessResult result = run_tidemark(
        {"run", "--pipeline", kPipeline, "--config", config_path().string(), "--database", db.url(), "--json"},
        options);
    // A crashed run's backend may still hold the pipeline's lock; the next run must not find it.
    if (result.exit_code == 137) {
      EXPECT_TRUE(db.await_sessions_ended(result.pid));
    }
    return result;
  }

  // Plain reruns until one completes; a rerun never needs more than one attempt here.
  static void rerun_until_done(const TestDatabase& db) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      const ProcessResult rerun = run(db, std::nullopt);
      if (rerun.exit_code == 0) return;
      ADD_FAILURE() << "rerun " << attempt << " exited " << rerun.exit_code << ": " << rerun.err;
    }
    FAIL() << "no rerun completed";
  }

  static void expect_same_as_clean(const TestDatabase& db) {
    const Snapshot s = snapshot(db);
    EXPECT_EQ(s.state, clean_->state);
    EXPECT_EQ(s.outbox, clean_->outbox);
    EXPECT_EQ(s.quarantine, clean_->quarantine);
    EXPECT_EQ(s.sequences, clean_->sequences);
    EXPECT_EQ(s.ledger, clean_->ledger);
    EXPECT_EQ(s.checkpoint, clean_->checkpoint);
    // No duplicate effect: one event per (destination, account, sequence) and per-account
    // sequences without gaps.
    EXPECT_EQ(db.scalar("SELECT count(*) - count(DISTINCT (destination, partition_key, sequence)) FROM outbox"), "0");
    EXPECT_EQ(db.scalar("SELECT count(*) FROM (SELECT destination, partition_key FROM outbox "
                        "GROUP BY 1, 2 HAVING max(sequence) <> count(*) OR min(sequence) <> 1) gaps"),
              "0");
  }

  static std::filesystem::path* folder_;
  static TestDatabase* clean_db_;
  static Snapshot* clean_;
};

std::filesystem::path* FailpointEndToEnd::folder_ = nullptr;
TestDatabase* FailpointEndToEnd::clean_db_ = nullptr;
Snapshot* FailpointEndToEnd::clean_ = nullptr;

TEST_F(FailpointEndToEnd, CleanRunReconcilesEveryRecordAndEndsAtTheEndOfTheSource) {
  ASSERT_NE(clean_, nullptr);
  EXPECT_EQ(clean_->ledger.at("batches"), kBatches);
  EXPECT_EQ(clean_->ledger.at("input"), kRecords);
  std::int64_t sum = 0;
  std::cout << "clean run of seed " << kSeed << ":";
  for (const char* outcome : kOutcomes) std::cout << " " << outcome << " " << clean_->ledger.at(outcome);
  std::cout << std::endl;
  for (const char* outcome : kOutcomes) {
    EXPECT_GT(clean_->ledger.at(outcome), 0) << "the generated source never produced " << outcome;
    sum += clean_->ledger.at(outcome);
  }
  EXPECT_EQ(sum, kRecords);
  const std::string canonical = std::filesystem::canonical(source_path()).string();
  EXPECT_EQ(clean_->checkpoint, canonical + " source.csv:" + std::to_string(std::filesystem::file_size(source_path())));
  EXPECT_EQ(clean_->quarantine.size(),
            static_cast<std::size_t>(clean_->ledger.at("invalid") + clean_->ledger.at("conflict")));
  // Two destinations: two events per accepted change.
  EXPECT_EQ(clean_->outbox.size(),
            static_cast<std::size_t>(2 * (clean_->ledger.at("inserted") + clean_->ledger.at("updated"))));
}

TEST_P(FailpointEndToEnd, KilledRunThenPlainRerunLeavesWhatOneCleanRunLeaves) {
  ASSERT_NE(clean_, nullptr);
  const auto& [point, hit] = GetParam();
  TestDatabase db;
  const ProcessResult killed = run(db, point + ":" + std::to_string(hit));
  ASSERT_EQ(killed.exit_code, 137) << killed.err;
  EXPECT_EQ(killed.out, "") << "a killed run prints no summary";
  // Commits are sequential: a kill at or after a batch's commit leaves exactly the batches
  // before it (and, after_commit, the batch itself). The reader decodes ahead of the
  // committer (one batch in the queue, one committing), so at the Nth after_decode
  // between N-3 and N-1 batches have committed.
  const int committed = std::stoi(db.scalar("SELECT count(*) FROM batch_ledger"));
  if (point == "after_decode") {
    EXPECT_GE(committed, std::max(0, hit - 3));
    EXPECT_LE(committed, hit - 1);
  } else {
    EXPECT_EQ(committed, point == "after_commit" ? hit : hit - 1);
  }

  rerun_until_done(db);
  expect_same_as_clean(db);
}

INSTANTIATE_TEST_SUITE_P(Points, FailpointEndToEnd,
                         ::testing::Combine(::testing::Values("after_decode", "before_commit", "after_commit"),
                                            ::testing::Values(1, 7)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_hit_" + std::to_string(std::get<1>(info.param));
                         });

// Killed again and again, a few batches into each run, until a run completes.
TEST_F(FailpointEndToEnd, RepeatedKillsAtEveryPointConvergeOnTheCleanRun) {
  ASSERT_NE(clean_, nullptr);
  TestDatabase db;
  const std::vector<std::string> plan = {"after_commit:3", "before_commit:2", "after_decode:4"};
  int kills = 0;
  for (int attempt = 0; attempt < 3 * kBatches; ++attempt) {
    const ProcessResult result = run(db, plan[static_cast<std::size_t>(attempt) % plan.size()]);
    if (result.exit_code == 0) break;
    ASSERT_EQ(result.exit_code, 137) << result.err;
    ++kills;
  }
  EXPECT_GT(kills, 5);
  rerun_until_done(db);
  expect_same_as_clean(db);
}

}  // namespace
}  // namespace tidemark
