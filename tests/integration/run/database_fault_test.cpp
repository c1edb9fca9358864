// Database faults during a run (docs/rules.md rule 9): the cluster stopped with
// `pg_ctl stop -m immediate` (as a crash would) between batches. Within the retry budget the
// run rides it out and ends where a run without the fault ends; beyond it the run fails with
// a message saying so, and what is visible is whole batches only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "pipeline/run/run_controller.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::pipeline {
namespace {

using testing::counts_text;
using testing::file_request;
using testing::query_rows;
using testing::Rows;
using testing::TempDir;
using testing::TestDatabase;

constexpr std::size_t kBatch = 20;
constexpr int kRecords = 400;

// New keys, newer revisions of earlier keys and an invalid record now and then, over 4 accounts.
std::string source_text() {
  std::string text = "transaction_id,source_revision,amount,account_id\n";
  for (int i = 0; i < kRecords; ++i) {
    if (i % 37 == 0) {
      text += "bad-" + std::to_string(i) + ",1,1e3,acct-" + std::to_string(i % 4) + "\n";
    } else {
      const int key = i % 150;
      text += "tx-" + std::to_string(key) + "," + std::to_string(i / 150 + 1) + "," + std::to_string(i) + ".25,acct-" +
              std::to_string(key % 4) + "\n";
    }
  }
  return text;
}

// What a run leaves behind, without timestamps or ids that differ between databases.
std::vector<Rows> effects(const TestDatabase& db) {
  return {query_rows(db, "SELECT transaction_id, source_revision, amount, account_id FROM transaction_state "
                         "ORDER BY transaction_id"),
          query_rows(db, "SELECT idempotency_key, partition_key, sequence, payload FROM outbox ORDER BY idempotency_key"),
          query_rows(db, "SELECT reason, raw, position FROM quarantine ORDER BY position"),
          query_rows(db, "SELECT position FROM checkpoint")};
}

class DatabaseFaultTest : public ::testing::Test {
 protected:
  TestDatabase reference_db_;
  TestDatabase db_;
  TempDir dir_;
  std::filesystem::path source_ = dir_.write("in.csv", source_text());
};

TEST_F(DatabaseFaultTest, RunRidesOutAnImmediateDatabaseStopAndEndsAsACleanRunDoes) {
  const RunSummary clean = run_pipeline(file_request(reference_db_, "p", source_, kBatch));

  RunRequest request = file_request(db_, "p", source_, kBatch);
  request.retry = {.max_attempts = 40, .base_delay = std::chrono::milliseconds(50),
                   .max_delay = std::chrono::milliseconds(500)};
  std::thread restarter;
  // Joined however the run ends, so that a failing run fails the test instead of aborting it.
  struct JoinRestarter {
    std::thread& thread;
    ~JoinRestarter() {
      if (thread.joinable()) thread.join();
    }
  } join_restarter{restarter};
  request.on_batch = [&](const BatchReport& report) {
    if (report.batch_no != 3) return;
    TestDatabase::crash_cluster();
    // The database is gone for a while; the run's next commit must wait for it.
    restarter = std::thread([] {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      try {
        TestDatabase::restart_cluster();
      } catch (const std::exception& error) {
        ADD_FAILURE() << "the cluster did not restart: " << error.what();
      }
    });
  };
  const RunSummary faulted = run_pipeline(request);

  EXPECT_EQ(faulted.batches, clean.batches);
  EXPECT_EQ(counts_text(faulted.counts), counts_text(clean.counts));
  EXPECT_EQ(effects(db_), effects(reference_db_));
  EXPECT_EQ(db_.scalar("SELECT sum(input) FROM batch_ledger"), std::to_string(kRecords));
  EXPECT_EQ(db_.scalar("SELECT status FROM runs WHERE id = " + std::to_string(faulted.run_id)), "succeeded");
}

TEST_F(DatabaseFaultTest, RunFailsClearlyWhenTheDatabaseStaysDownAndLeavesOnlyWholeBatches) {
  RunRequest request = file_request(db_, "p", source_, kBatch);
  request.retry = {.max_attempts = 4, .base_delay = std::chrono::milliseconds(10),
                   .max_delay = std::chrono::milliseconds(50)};
  request.on_batch = [&](const BatchReport& report) {
    if (report.batch_no == 2) TestDatabase::crash_cluster();
  };
  try {
    run_pipeline(request);
    ADD_FAILURE() << "the run succeeded with the database down";
  } catch (const std::exception& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("failed after 4 attempts"));
  }
  TestDatabase::restart_cluster();

  // Exactly the two committed batches are visible: 40 records read, the checkpoint after them.
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM batch_ledger"), "2");
  EXPECT_EQ(db_.scalar("SELECT sum(input) FROM batch_ledger"), std::to_string(2 * kBatch));
  EXPECT_EQ(db_.scalar("SELECT position FROM checkpoint"),
            db_.scalar("SELECT end_position FROM batch_ledger WHERE batch_no = 2"));

  // The next run takes over from the checkpoint and ends where one clean run ends.
  const RunSummary rest = run_pipeline(file_request(db_, "p", source_, kBatch));
  run_pipeline(file_request(reference_db_, "p", source_, kBatch));
  EXPECT_EQ(effects(db_), effects(reference_db_));
  EXPECT_EQ(db_.scalar("SELECT sum(input) FROM batch_ledger"), std::to_string(kRecords));
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM runs WHERE status = 'failed'"), "1");
  EXPECT_EQ(db_.scalar("SELECT status FROM runs WHERE id = " + std::to_string(rest.run_id)), "succeeded");
}

}  // namespace
}  // namespace tidemark::pipeline
