// The run controller against a real PostgreSQL ("Tests: Integration"): replay,
// resume, reconciliation of every batch, folder sources, and the one-run-per-pipeline lock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "connectors/file/file_position.hpp"
#include "connectors/file/file_source.hpp"
#include "pipeline/core/utf8.hpp"
#include "pipeline/store/committer.hpp"
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

constexpr char kHeader[] = "transaction_id,source_revision,amount,account_id\n";

// Every table a run writes, whole rows, in a stable order.
std::vector<Rows> snapshot(const TestDatabase& db) {
  return {query_rows(db, "SELECT * FROM transaction_state ORDER BY transaction_id"),
          query_rows(db, "SELECT * FROM outbox ORDER BY id"),
          query_rows(db, "SELECT * FROM tidemark_partition_sequence ORDER BY partition_key"),
          query_rows(db, "SELECT * FROM checkpoint ORDER BY pipeline, source")};
}

// The sum of each count over a run's ledger rows, in the order of kAllOutcomes.
OutcomeCounts ledger_counts(const TestDatabase& db, std::int64_t run_id) {
  const Rows rows = query_rows(
      db, "SELECT COALESCE(sum(inserted), 0), COALESCE(sum(updated), 0), COALESCE(sum(unchanged), 0), "
          "COALESCE(sum(stale), 0), COALESCE(sum(superseded), 0), COALESCE(sum(duplicate), 0), "
          "COALESCE(sum(invalid), 0), COALESCE(sum(conflict), 0) FROM batch_ledger WHERE run_id = " +
              std::to_string(run_id));
  OutcomeCounts counts;
  for (std::size_t i = 0; i < kOutcomeCount; ++i) counts.by_outcome[i] = std::stoull(rows.at(0).at(i));
  return counts;
}

class RunTest : public ::testing::Test {
 protected:
  TestDatabase db_;
  TempDir dir_;
};

// 7 records: 4 inserted, 1 updated, 1 invalid, 1 conflicting with the stored row.
const std::string kMixedSource = std::string(kHeader) +
                                 "tx-1,1,10.00,acct-A\n"
                                 "tx-2,1,20.00,acct-A\n"
                                 "bad,1,1e3,acct-A\n"
                                 "tx-1,2,12.00,acct-A\n"
                                 "tx-3,1,30.00,\n"
                                 "tx-2,1,21.00,acct-A\n"
                                 "tx-4,1,40.00,acct-B\n";

TEST_F(RunTest, ReplayOfAWholeSourceChangesNoRowAddsNoOutboxRowAndNeverMovesTheCheckpointBack) {
  const auto path = dir_.write("in.csv", kMixedSource);
  const RunSummary first = pipeline::run_pipeline(file_request(db_, "p", path, 3));
  EXPECT_EQ(counts_text(first.counts), "inserted 4, updated 1, invalid 1, conflict 1");
  const std::string end = "in.csv:" + std::to_string(kMixedSource.size());
  EXPECT_EQ(first.checkpoint, end);
  const auto before = snapshot(db_);

  // Smaller batches than the first run: every replayed batch ends behind the checkpoint.
  auto replay = file_request(db_, "p", path, 2, /*replay=*/true);
  std::vector<std::string> checkpoints_seen;
  replay.on_batch = [&](const BatchReport&) {
    checkpoints_seen.push_back(db_.scalar("SELECT position FROM checkpoint WHERE pipeline = 'p'"));
  };
  const RunSummary again = pipeline::run_pipeline(replay);
  EXPECT_EQ(again.batches, 4u);
  EXPECT_EQ(counts_text(again.counts), "unchanged 4, stale 1, invalid 1, conflict 1");
  EXPECT_EQ(checkpoints_seen, std::vector<std::string>(4, end));  // after each committed batch
  EXPECT_EQ(snapshot(db_), before);
  EXPECT_EQ(query_rows(db_, "SELECT mode, status FROM runs ORDER BY id"),
            (Rows{{"resume", "succeeded"}, {"replay", "succeeded"}}));
}

// A run records its end on the committer's first session, which took the pipeline's
// lock and committed its batches; it opens no other connection just to say it finished. The
// second session is the one it stages batches ahead on (docs/architecture.md).
TEST_F(RunTest, NormalRunOpensTwoSessionsAndRecordsItsEndOnTheFirst) {
  dir_.write("in.csv", kMixedSource);
  RunSummary summary;
  const std::int64_t opened = testing::sessions_opened_by(db_.url(), [&] {
    summary = run_pipeline(file_request(db_, "p", dir_.path() / "in.csv", 3));
  });
  EXPECT_EQ(summary.batches, 3u);
  EXPECT_EQ(opened, 2);
  EXPECT_EQ(db_.scalar("SELECT status || ' ' || (finished_at IS NOT NULL) FROM runs"), "succeeded true");
}

TEST_F(RunTest, ReplayDoesNotQuarantineARejectedRecordTwice) {
  const auto path = dir_.write("in.csv", kMixedSource);
  pipeline::run_pipeline(file_request(db_, "p", path, 3));
  const Rows quarantined = query_rows(db_, "SELECT * FROM quarantine ORDER BY id");
  ASSERT_EQ(quarantined.size(), 2u);
  pipeline::run_pipeline(file_request(db_, "p", path, 2, /*replay=*/true));
  EXPECT_EQ(query_rows(db_, "SELECT * FROM quarantine ORDER BY id"), quarantined);
}

TEST_F(RunTest, RunAfterTheSourceGrewReadsOnlyTheNewRecords) {
  const std::string part1 = std::string(kHeader) + "tx-1,1,10.00,acct-A\ntx-2,1,20.00,acct-A\ntx-3,1,30.00,\n";
  const std::string part2 = "tx-1,2,11.00,acct-A\ntx-4,1,40.00,acct-B\n";
  const auto path = dir_.write("in.csv", part1);
  const RunSummary first = pipeline::run_pipeline(file_request(db_, "p", path, 2));
  EXPECT_EQ(counts_text(first.counts), "inserted 3");
  EXPECT_EQ(first.checkpoint, "in.csv:" + std::to_string(part1.size()));

  dir_.append("in.csv", part2);
  const RunSummary second = pipeline::run_pipeline(file_request(db_, "p", path, 2));
  EXPECT_EQ(counts_text(second.counts), "inserted 1, updated 1");
  EXPECT_EQ(second.checkpoint, "in.csv:" + std::to_string(part1.size() + part2.size()));
  EXPECT_EQ(query_rows(db_, "SELECT start_position, end_position, input FROM batch_ledger WHERE run_id = " +
                                std::to_string(second.run_id)),
            (Rows{{first.checkpoint, second.checkpoint, "2"}}));

  const RunSummary third = pipeline::run_pipeline(file_request(db_, "p", path, 2));
  EXPECT_EQ(third.batches, 0u);
  EXPECT_EQ(counts_text(third.counts), "none");
  EXPECT_EQ(db_.scalar("SELECT position FROM checkpoint"), second.checkpoint);
  EXPECT_EQ(query_rows(db_, "SELECT transaction_id, source_revision, amount FROM transaction_state ORDER BY 1"),
            (Rows{{"tx-1", "2", "11.00"}, {"tx-2", "1", "20.00"}, {"tx-3", "1", "30.00"}, {"tx-4", "1", "40.00"}}));
}

TEST_F(RunTest, RunStoppedAfterABatchIsResumedExactlyWhereItStopped) {
  const std::string text =
      std::string(kHeader) + "tx-1,1,1.00,\ntx-2,1,2.00,\ntx-3,1,3.00,\ntx-4,1,4.00,\ntx-5,1,5.00,\n";
  const auto path = dir_.write("in.csv", text);
  std::atomic<bool> stop{false};
  auto partial = file_request(db_, "p", path, 2);
  partial.stop_requested = &stop;
  // Requested once batch 1 has committed (the reader may have read further ahead).
  partial.on_batch = [&](const BatchReport&) { stop = true; };
  const RunSummary first = pipeline::run_pipeline(partial);
  EXPECT_TRUE(first.stopped_early);
  EXPECT_EQ(first.batches, 1u);
  EXPECT_EQ(counts_text(first.counts), "inserted 2");
  // Cut short by a graceful stop: `stopped`, not `succeeded`, with its committed batch kept.
  EXPECT_EQ(db_.scalar("SELECT status FROM runs WHERE id = " + std::to_string(first.run_id)), "stopped");

  const RunSummary second = pipeline::run_pipeline(file_request(db_, "p", path, 2));
  EXPECT_FALSE(second.stopped_early);
  EXPECT_EQ(second.batches, 2u);
  EXPECT_EQ(db_.scalar("SELECT status FROM runs WHERE id = " + std::to_string(second.run_id)), "succeeded");
  // Nothing read twice (it would be "unchanged"), nothing skipped.
  EXPECT_EQ(counts_text(second.counts), "inserted 3");
  EXPECT_EQ(db_.scalar("SELECT start_position FROM batch_ledger WHERE run_id = " + std::to_string(second.run_id) +
                       " AND batch_no = 1"),
            first.checkpoint);
  EXPECT_EQ(db_.scalar("SELECT sum(input) FROM batch_ledger"), "5");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM transaction_state"), "5");
}

// Stopped after batch 2, while batch 3 may be staged ahead on the first session: the staged
// batch is rolled back with the stop, and the run records its end on that session without
// opening another connection.
TEST_F(RunTest, RunStoppedWhileABatchIsStagedAheadRollsItBackAndRecordsItsEnd) {
  std::string text = kHeader;
  for (int i = 1; i <= 7; ++i) text += "tx-" + std::to_string(i) + ",1," + std::to_string(i) + ".00,\n";
  const auto path = dir_.write("in.csv", text);
  std::atomic<bool> stop{false};
  auto partial = file_request(db_, "p", path, 2);
  partial.stop_requested = &stop;
  partial.on_batch = [&](const BatchReport& report) { stop = report.batch_no == 2; };
  RunSummary first;
  const std::int64_t opened = testing::sessions_opened_by(db_.url(), [&] { first = pipeline::run_pipeline(partial); });
  EXPECT_EQ(opened, 2);
  EXPECT_TRUE(first.stopped_early);
  EXPECT_EQ(first.batches, 2u);
  EXPECT_EQ(db_.scalar("SELECT status FROM runs WHERE id = " + std::to_string(first.run_id)), "stopped");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM transaction_state"), "4");

  const RunSummary second = pipeline::run_pipeline(file_request(db_, "p", path, 2));
  EXPECT_EQ(counts_text(second.counts), "inserted 3");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM transaction_state"), "7");
}

// A batch staged ahead begins its transaction while the batch before it commits. Its ledger
// row's committed_at and the checkpoint's updated_at are still later than that commit, so
// the ledger ordered by committed_at is the order the batches committed in.
TEST_F(RunTest, EachBatchsCommittedAtIsAfterTheCommitOfTheBatchBeforeIt) {
  std::string text = kHeader;
  for (int i = 1; i <= 6; ++i) text += "tx-" + std::to_string(i) + ",1," + std::to_string(i) + ".00,\n";
  const auto path = dir_.write("in.csv", text);
  auto request = file_request(db_, "p", path, 2);
  std::vector<std::string> committed_by;  // the server's clock once each batch has committed
  request.on_batch = [&](const BatchReport&) { committed_by.push_back(db_.scalar("SELECT clock_timestamp()")); };
  const RunSummary summary = pipeline::run_pipeline(request);
  ASSERT_EQ(summary.batches, 3u);
  ASSERT_EQ(committed_by.size(), 3u);
  for (int batch = 2; batch <= 3; ++batch) {
    EXPECT_EQ(db_.scalar("SELECT committed_at >= '" + committed_by[batch - 2] + "' FROM batch_ledger WHERE run_id = " +
                         std::to_string(summary.run_id) + " AND batch_no = " + std::to_string(batch)),
              "t")
        << "batch " << batch;
  }
  EXPECT_EQ(db_.scalar("SELECT updated_at >= '" + committed_by[1] + "' FROM checkpoint"), "t");
}

TEST_F(RunTest, EveryBatchOfAFolderSourceReconcilesAndBatchesRunAcrossFilesInLexicalOrder) {
  // Written out of order; only .csv files are read, in lexical order: a.csv, then b.csv.
  const std::string a = std::string(kHeader) +
                        "tx-1,1,10.00,acct-A\n"   // inserted
                        "tx-1,1,10.00,acct-A\n"   // duplicate
                        "tx-2,1,1.001,acct-A\n"   // invalid: line 4
                        "tx-3,1,30.00,acct-B\n";  // inserted (batch 2)
  const std::string b = std::string(kHeader) +
                        "tx-4,1,40.00,\n"         // superseded
                        "tx-4,2,41.00,\n"         // inserted
                        "tx-5,1,NaN,\n";          // invalid: line 4 (batch 3)
  dir_.write("b.csv", b);
  dir_.write("a.csv", a);
  dir_.write("notes.txt", "not a source file\n");
  dir_.write("c.jsonl", "{\"transaction_id\":\"tx-9\",\"source_revision\":1,\"amount\":1}\n");
  const RunSummary summary = pipeline::run_pipeline(file_request(db_, "p", dir_.path(), 3));

  EXPECT_EQ(summary.batches, 3u);
  EXPECT_EQ(counts_text(summary.counts), "inserted 3, superseded 1, duplicate 1, invalid 2");
  EXPECT_EQ(summary.counts.input(), 7u);  // the records of a.csv and b.csv, nothing else
  EXPECT_EQ(counts_text(ledger_counts(db_, summary.run_id)), counts_text(summary.counts));

  const auto offset_after = [](const std::string& text, int records) {
    std::size_t offset = 0;
    for (int line = 0; line <= records; ++line) offset = text.find('\n', offset) + 1;  // header + records
    return std::to_string(offset);
  };
  // Batches are consecutive records in source order, across the file boundary; each starts
  // where the previous ended and reconciles (input = the sum of its outcomes).
  const Rows ledger = query_rows(
      db_, "SELECT batch_no, start_position, end_position, input, "
           "input = inserted + updated + unchanged + stale + superseded + duplicate + invalid + conflict "
           "FROM batch_ledger ORDER BY batch_no");
  ASSERT_EQ(ledger.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(ledger[0].begin() + 2, ledger[0].end()),
            (std::vector<std::string>{"a.csv:" + offset_after(a, 3), "3", "t"}));
  EXPECT_EQ(ledger[1], (std::vector<std::string>{"2", "a.csv:" + offset_after(a, 3), "b.csv:" + offset_after(b, 2),
                                                 "3", "t"}));
  EXPECT_EQ(ledger[2], (std::vector<std::string>{"3", "b.csv:" + offset_after(b, 2), "b.csv:" + offset_after(b, 3),
                                                 "1", "t"}));
  EXPECT_EQ(summary.checkpoint, "b.csv:" + std::to_string(b.size()));
  EXPECT_EQ(db_.scalar("SELECT position FROM checkpoint"), summary.checkpoint);

  // Quarantined records say where they are: file:line (byte offset of the record).
  EXPECT_EQ(query_rows(db_, "SELECT reason, raw, position, decode_context FROM quarantine ORDER BY id"),
            (Rows{{"invalid", "tx-2,1,1.001,acct-A", "a.csv:4 (byte " + offset_after(a, 2) + ")",
                   "transaction_id,source_revision,amount,account_id"},
                  {"invalid", "tx-5,1,NaN,", "b.csv:4 (byte " + offset_after(b, 2) + ")",
                   "transaction_id,source_revision,amount,account_id"}}));
}

TEST_F(RunTest, SummaryCountsEqualTheLedgerAndTheSourceOverSeveralRuns) {
  const auto path = dir_.write("in.csv", kMixedSource);
  for (std::size_t batch_size : {1u, 2u, 5u, 100u}) {
    SCOPED_TRACE("batch size " + std::to_string(batch_size));
    const RunSummary summary =
        pipeline::run_pipeline(file_request(db_, "p" + std::to_string(batch_size), path, batch_size));
    EXPECT_EQ(summary.counts.input(), 7u);
    EXPECT_EQ(summary.batches, (7 + batch_size - 1) / batch_size);
    EXPECT_EQ(counts_text(ledger_counts(db_, summary.run_id)), counts_text(summary.counts));
    EXPECT_EQ(db_.scalar("SELECT count(*) FROM batch_ledger WHERE run_id = " + std::to_string(summary.run_id)),
              std::to_string(summary.batches));
  }
}

TEST_F(RunTest, RunOfAPipelineHeldByAnotherCommitterThrowsPipelineBusyNamingTheHolder) {
  const auto path = dir_.write("in.csv", std::string(kHeader) + "tx-1,1,1.00,\ntx-2,1,2.00,\n");
  {
    Committer holder(db_.database(), "p", "elsewhere", {}, testing::fast_retries());
    const int holder_pid = holder.connection().backendpid();
    try {
      run_pipeline(file_request(db_, "p", path));
      ADD_FAILURE() << "run_pipeline did not throw PipelineBusy";
    } catch (const PipelineBusy& busy) {
      EXPECT_THAT(busy.what(), ::testing::HasSubstr("'p'"));
      EXPECT_THAT(busy.what(), ::testing::HasSubstr("backend pid " + std::to_string(holder_pid)));
      EXPECT_THAT(busy.what(), ::testing::HasSubstr("tidemark pid " + std::to_string(getpid())));
    }
    // A refused run leaves no trace but its message.
    EXPECT_EQ(db_.scalar("SELECT count(*) FROM runs"), "0");
    EXPECT_EQ(db_.scalar("SELECT count(*) FROM transaction_state"), "0");

    // Another pipeline is not held.
    EXPECT_EQ(counts_text(run_pipeline(file_request(db_, "q", path)).counts), "inserted 2");
  }
  // Released with the holder's connection (once its backend has exited).
  EXPECT_EQ(counts_text(pipeline::run_pipeline(file_request(db_, "p", path)).counts), "unchanged 2");
}

// The pipeline lock is released when a run ends, not when its backend gets round to exiting.
TEST_F(RunTest, RunRightAfterAnotherOfTheSamePipelineIsNotRefused) {
  const auto path = dir_.write("in.csv", std::string(kHeader) + "tx-1,1,1.00,\n");
  for (int attempt = 1; attempt <= 100; ++attempt) {
    SCOPED_TRACE("run " + std::to_string(attempt));
    EXPECT_NO_THROW(run_pipeline(file_request(db_, "p", path, 1000, /*replay=*/true)));
  }
}

// A run left 'running' by a process that died cannot still be running once the next run
// holds the pipeline's lock: the next run records it as failed, and no other pipeline's run.
TEST_F(RunTest, RunLeftRunningByADeadProcessIsMarkedFailedByTheNextRun) {
  const std::string abandoned = db_.scalar(
      "INSERT INTO runs (pipeline, trigger, mode, status, started_at) "
      "VALUES ('p', 'cli', 'resume', 'running', now()) RETURNING id");
  const std::string other = db_.scalar(
      "INSERT INTO runs (pipeline, trigger, mode, status, started_at) "
      "VALUES ('q', 'cli', 'resume', 'running', now()) RETURNING id");
  const auto summary = run_pipeline(file_request(db_, "p", dir_.write("in.csv", std::string(kHeader) + "tx-1,1,1.00,\n")));

  EXPECT_EQ(db_.scalar("SELECT status FROM runs WHERE id = " + abandoned), "failed");
  EXPECT_NE(db_.scalar("SELECT error FROM runs WHERE id = " + abandoned).find("ended before the run finished"),
            std::string::npos);
  EXPECT_EQ(db_.scalar("SELECT status FROM runs WHERE id = " + other), "running");
  EXPECT_EQ(db_.scalar("SELECT status FROM runs WHERE id = " + std::to_string(summary.run_id)), "succeeded");
}

// --- a half-written last line ------------------------------------------

// file_request with the source's settle time set.
RunRequest settling_request(const TestDatabase& db, const std::filesystem::path& path, std::chrono::milliseconds settle) {
  auto request = file_request(db, "p", path);
  request.open_source = [path, settle] {
    return connectors::file::open_file_source(path, connectors::file::Format::kCsv, settle);
  };
  return request;
}

TEST_F(RunTest, HalfWrittenLastLineIsNotStoredAndTheNextRunReadsItWhole) {
  const std::string done = std::string(kHeader) + "W-1,1,10.00,ACC-W\n";
  const auto path = dir_.write("in.csv", done + "W-2,1,12");  // on its way to 1234.50, just written
  const RunSummary first = run_pipeline(settling_request(db_, path, std::chrono::hours(1)));
  EXPECT_EQ(counts_text(first.counts), "inserted 1");
  EXPECT_EQ(first.pending_tail_bytes, std::string("W-2,1,12").size());
  EXPECT_EQ(first.checkpoint, "in.csv:" + std::to_string(done.size()));
  EXPECT_EQ(db_.scalar("SELECT position FROM checkpoint"), first.checkpoint);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM transaction_state WHERE transaction_id = 'W-2'"), "0");

  dir_.append("in.csv", "34.50,ACC-W\n");
  const RunSummary second = run_pipeline(settling_request(db_, path, std::chrono::hours(1)));
  EXPECT_EQ(counts_text(second.counts), "inserted 1");
  EXPECT_EQ(second.pending_tail_bytes, 0u);
  EXPECT_EQ(db_.scalar("SELECT amount FROM transaction_state WHERE transaction_id = 'W-2'"), "1234.50");
}

TEST_F(RunTest, SettledLastLineWithoutNewlineIsARecord) {
  const std::string text = std::string(kHeader) + "W-1,1,10.00,ACC-W\nW-2,1,12.00,ACC-W";
  const auto path = dir_.write("in.csv", text);
  std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now() - std::chrono::hours(2));
  const RunSummary summary = run_pipeline(settling_request(db_, path, std::chrono::hours(1)));
  EXPECT_EQ(counts_text(summary.counts), "inserted 2");
  EXPECT_EQ(summary.pending_tail_bytes, 0u);
  EXPECT_EQ(summary.checkpoint, "in.csv:" + std::to_string(text.size()));
}

// --- unusable input fails fast -----------------------------------------

// Runs `request`, expecting it to throw; returns the message.
std::string run_error(const RunRequest& request) {
  try {
    run_pipeline(request);
  } catch (const std::exception& error) {
    return error.what();
  }
  return "no error";
}

TEST_F(RunTest, CsvWithoutARequiredColumnFailsTheRunAndTheCheckpointStaysBeforeIt) {
  dir_.write("a.csv", std::string(kHeader) + "tx-1,1,1.00,\n");
  const RunSummary first = run_pipeline(file_request(db_, "p", dir_.path()));
  dir_.write("b.csv", "transaction_id,amount\ntx-2,2.00\ntx-3,3.00\n");
  dir_.write("c.csv", std::string(kHeader) + "tx-4,1,4.00,\n");

  const std::string error = run_error(file_request(db_, "p", dir_.path(), 1));
  EXPECT_THAT(error, ::testing::HasSubstr("b.csv"));
  EXPECT_THAT(error, ::testing::HasSubstr("source_revision"));
  EXPECT_EQ(db_.scalar("SELECT position FROM checkpoint"), first.checkpoint);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM quarantine"), "0");
  EXPECT_EQ(db_.scalar("SELECT string_agg(transaction_id, ',' ORDER BY 1) FROM transaction_state"), "tx-1");
  EXPECT_EQ(query_rows(db_, "SELECT status, COALESCE(error LIKE '%b.csv%', false) FROM runs ORDER BY id"),
            (Rows{{"succeeded", "f"}, {"failed", "t"}}));
}

TEST_F(RunTest, CsvReadAsJsonLinesFailsTheRunNamingTheFormat) {
  std::string text(kHeader);
  for (int i = 0; i < 150; ++i) text += "tx-" + std::to_string(i) + ",1,1.00,\n";
  const auto path = dir_.write("in.csv", text);
  const std::string error =
      run_error(file_request(db_, "p", path, 10, false, connectors::file::Format::kJsonl));
  EXPECT_THAT(error, ::testing::HasSubstr("in.csv"));
  EXPECT_THAT(error, ::testing::HasSubstr("jsonl"));
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM checkpoint"), "0");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM quarantine"), "0");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM batch_ledger"), "0");
}

TEST_F(RunTest, BatchThatCrossesMaxRejectedRollsBackAndTheRunFailsNamingTheCounts) {
  // Batches of 2: 1 invalid in batch 1, 1 in batch 2 (2 in all: at the limit), 1 in batch 3.
  const std::string text = std::string(kHeader) +
                           "tx-1,1,1.00,\nbad-1,1,NaN,\n"
                           "bad-2,1,NaN,\ntx-2,1,2.00,\n"
                           "tx-3,1,3.00,\nbad-3,1,NaN,\n"
                           "tx-4,1,4.00,\n";
  const auto path = dir_.write("in.csv", text);
  auto request = file_request(db_, "p", path, 2);
  request.max_rejected = parse_rejection_limit("2");
  try {
    run_pipeline(request);
    ADD_FAILURE() << "the run did not fail";
  } catch (const RejectionLimitExceeded& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("max_rejected 2"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("3 invalid + 0 conflict = 3 of 6 input"));
  }
  const std::string after_batch_2 = db_.scalar("SELECT end_position FROM batch_ledger WHERE batch_no = 2");
  EXPECT_EQ(db_.scalar("SELECT position FROM checkpoint"), after_batch_2);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM batch_ledger"), "2");
  EXPECT_EQ(db_.scalar("SELECT string_agg(transaction_id, ',' ORDER BY 1) FROM quarantine"), "bad-1,bad-2");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM transaction_state WHERE transaction_id = 'tx-3'"), "0");
  EXPECT_EQ(db_.scalar("SELECT status FROM runs"), "failed");

  // A share of the input: 3 of 7 is above 40%; without a limit the rest loads.
  request.max_rejected = parse_rejection_limit("40%");
  EXPECT_THAT(run_error(request), ::testing::HasSubstr("max_rejected 40%"));
  request.max_rejected.reset();
  EXPECT_EQ(counts_text(run_pipeline(request).counts), "inserted 2, invalid 1");
}

// --- batches bounded by bytes -----------------------------------------

TEST_F(RunTest, BatchClosesAtMaxBatchBytesBeforeBatchSizeAndEveryBatchReconciles) {
  // Five records of 13 raw bytes each: 2 fit in 30 bytes.
  const std::string text = std::string(kHeader) + "tx-1,1,1.00,\ntx-2,1,2.00,\ntx-3,1,3.00,\ntx-4,1,4.00,\ntx-5,1,5.00,\n";
  auto request = file_request(db_, "p", dir_.write("in.csv", text), 1000);
  request.max_batch_bytes = 30;
  const RunSummary summary = run_pipeline(request);
  EXPECT_EQ(summary.batches, 3u);
  EXPECT_EQ(counts_text(summary.counts), "inserted 5");
  EXPECT_EQ(summary.checkpoint, "in.csv:" + std::to_string(text.size()));
  EXPECT_EQ(query_rows(db_, "SELECT batch_no, input FROM batch_ledger ORDER BY batch_no"),
            (Rows{{"1", "2"}, {"2", "2"}, {"3", "1"}}));
}

// --- bytes that are not text -------------------------------------------

TEST(StoredNames, EscapeIsReversibleAndLeavesUtf8Alone) {
  EXPECT_EQ(escape_bytes("caf\xc3\xa9.csv"), "caf\xc3\xa9.csv");
  EXPECT_EQ(escape_bytes("a\xff\\b"), "a\\xff\\\\b");
  EXPECT_EQ(escape_bytes(std::string("n\0l", 3)), "n\\x00l");
  for (const std::string& name : {std::string("a\xff\\b\\x41\xc3"), std::string("\\\\x"), std::string("x\\")}) {
    EXPECT_EQ(unescape_bytes(escape_bytes(name)), name) << escape_bytes(name);
  }
  const connectors::file::FilePosition checkpoint{"b\xe9:1.csv", 42};
  EXPECT_EQ(checkpoint.to_position().text, "b\\xe9:1.csv:42");
  EXPECT_EQ(connectors::file::FilePosition::parse(checkpoint.to_position()), checkpoint);
}

TEST_F(RunTest, FileNamesAndHeadersThatAreNotUtf8NeverStallThePipeline) {
  // A Latin-1 file name and header (the é of "réf" is 0xE9), a record with a Latin-1 value,
  // and a file after them. "a\xc3\xa9" (é in UTF-8) sorts before "a\xff" as bytes but after
  // its escaped form "a\\xff".
  const std::string latin1_header = "transaction_id,source_revision,amount,account_id,r\xe9" "f\n";
  const std::string line2 = "tx-2,1,2.00,,x\n";
  const std::string line3 = "tx-3,1,3.00,caf\xe9,y\n";
  dir_.write("a\xc3\xa9.csv", std::string(kHeader) + "tx-1,1,1.00,\n");
  dir_.write("a\xff.csv", latin1_header + line2 + line3);
  // A batch per record, so the checkpoint moves from one file to the next.
  const RunSummary first = run_pipeline(file_request(db_, "p", dir_.path(), 1));
  EXPECT_EQ(counts_text(first.counts), "inserted 2, invalid 1");
  EXPECT_EQ(first.checkpoint, "a\\xff.csv:" + std::to_string(latin1_header.size() + line2.size() + line3.size()));
  EXPECT_EQ(db_.scalar("SELECT position FROM checkpoint"), first.checkpoint);
  EXPECT_EQ(query_rows(db_, "SELECT reason, transaction_id, position, decode_context FROM quarantine"),
            (Rows{{"invalid", "tx-3", "a\\xff.csv:3 (byte " + std::to_string(latin1_header.size() + line2.size()) + ")",
                   "transaction_id,source_revision,amount,account_id,r\\xe9f"}}));

  // The next run resumes inside the escaped file name and moves on to later files.
  dir_.write("b.csv", std::string(kHeader) + "tx-4,1,4.00,\n");
  const RunSummary second = run_pipeline(file_request(db_, "p", dir_.path()));
  EXPECT_EQ(counts_text(second.counts), "inserted 1");
  EXPECT_EQ(db_.scalar("SELECT position FROM checkpoint"), second.checkpoint);
  EXPECT_EQ(second.checkpoint, "b.csv:" + std::to_string(std::string(kHeader).size() + 13));
}

}  // namespace
}  // namespace tidemark::pipeline
