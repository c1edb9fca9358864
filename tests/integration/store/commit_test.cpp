// The commit step against a real PostgreSQL ("Tests: Integration"): the design
// note's table, in-batch planning outcomes, conflict precedence, the outbox rows, and
// transient database errors. Records go through the whole pipeline (run_pipeline over CSV
// files) except where a test needs the Committer itself.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "connectors/file/file_position.hpp"
#include "connectors/file/record_stream.hpp"
#include "pipeline/core/plan.hpp"
#include "pipeline/store/committer.hpp"
#include "pipeline/store/outbox.hpp"
#include "pipeline/run/run_controller.hpp"
#include "pipeline/core/validate.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::pipeline {
namespace {

using testing::counts_text;
using testing::query_rows;
using testing::Rows;
using testing::state_row;
using testing::TempDir;
using testing::TestDatabase;

constexpr char kHeader[] = "transaction_id,source_revision,amount,account_id,occurred_at\n";
// The example's stored row: revision 2 of tx-1 at 130.00.
constexpr char kStored[] = "tx-1,2,130.00,acct-1,2024-05-01T10:00:00Z\n";

class CommitTest : public ::testing::Test {
 protected:
  // Sends `records` (CSV lines) as a new file, so each send is a new delivery with its own
  // checkpoint, not a resume of an earlier one.
  RunSummary send(const std::string& records, std::size_t batch_size = 1000,
                  std::vector<std::string> destinations = {"ledger"}) {
    const auto path = dir_.write("send-" + std::to_string(++sends_) + ".csv", kHeader + records);
    auto request = testing::file_request(db_, "p", path, batch_size);
    request.destinations = std::move(destinations);
    return pipeline::run_pipeline(request);
  }

  std::string count(const std::string& table) const { return db_.scalar("SELECT count(*) FROM " + table); }

  // A batch for the Committer itself: a CSV file's lines decoded, validated and planned.
  struct DirectBatch {
    std::string file;
    std::size_t bytes = 0;  // the file's length, the position after its last record
    std::vector<DecodedRecord> decoded;
    std::vector<Checked> validated;
    BatchPlan plan;
    // The batch as one read from the file's start to its end.
    BatchInput whole(int batch_no) const {
      return {decoded, validated, plan, batch_no, file + ":0", connectors::file::FilePosition{file, bytes}.to_position()};
    }
  };
  static DirectBatch direct_batch(const std::string& lines, const std::string& file = "in.csv") {
    DirectBatch batch;
    const std::string text = kHeader + lines;
    batch.file = file;
    batch.bytes = text.size();
    batch.decoded = connectors::file::decode_text(connectors::file::Format::kCsv, text, file);
    const RecordChecker checker(built_in_transaction_entity());
    for (const auto& record : batch.decoded) batch.validated.push_back(checker.check(record));
    batch.plan = plan_batch(batch.validated);
    return batch;
  }

  // Stores the example's row and checks it is stored exactly as sent.
  Rows store_revision_2() {
    EXPECT_EQ(counts_text(send(kStored).counts), "inserted 1");
    const Rows stored = state_row(db_, "tx-1");
    EXPECT_EQ(stored.size(), 1u);
    if (!stored.empty()) {
      EXPECT_EQ(std::vector<std::string>(stored[0].begin(), stored[0].begin() + 6),
                (std::vector<std::string>{"tx-1", "2", "130.00", "acct-1", "2024-05-01 10:00:00", "p"}));
    }
    return stored;
  }

  TestDatabase db_;
  TempDir dir_;
  int sends_ = 0;
};

// The payloads of the notifications on the relays' channel, in the order they came.
class OutboxNotifications : public pqxx::notification_receiver {
 public:
  explicit OutboxNotifications(pqxx::connection& connection)
      : pqxx::notification_receiver(connection, kOutboxChannel) {}
  void operator()(const std::string& payload, int) override { payloads.push_back(payload); }
  std::vector<std::string> payloads;
};

// A serving relay LISTENs on the channel (docs/delivery.md): a batch that wrote outbox rows
// wakes it at its commit; one that wrote none (all unchanged) sends nothing. A marker NOTIFY
// sent after both shows, by its place, that nothing else came.
TEST_F(CommitTest, ABatchThatWritesOutboxRowsNotifiesTheRelaysAtItsCommitAndOneThatWritesNoneDoesNot) {
  auto connection = db_.connect();
  OutboxNotifications notifications(*connection);
  EXPECT_EQ(counts_text(send(kStored).counts), "inserted 1");
  EXPECT_EQ(counts_text(send(kStored).counts), "unchanged 1");
  db_.scalar("SELECT 'sent' FROM (SELECT pg_notify('" + std::string(kOutboxChannel) + "', 'marker')) n");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (notifications.payloads.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    connection->await_notification(1, 0);
  }
  EXPECT_EQ(notifications.payloads, (std::vector<std::string>{"", "marker"}));
}

// --- The example's table: revision 2 (130.00) stored, each record sent twice. ---

TEST_F(CommitTest, SameRevisionSamePayloadSentTwiceIsUnchangedAndLeavesTheWholeRowAsStored) {
  const Rows stored = store_revision_2();
  for (int send_no = 1; send_no <= 2; ++send_no) {
    SCOPED_TRACE("send " + std::to_string(send_no));
    EXPECT_EQ(counts_text(send(kStored).counts), "unchanged 1");
    EXPECT_EQ(state_row(db_, "tx-1"), stored);  // updated_at included: the row was not rewritten
  }
  EXPECT_EQ(count("transaction_state"), "1");
  EXPECT_EQ(count("outbox"), "1");
  EXPECT_EQ(count("quarantine"), "0");
}

TEST_F(CommitTest, LowerRevisionSentTwiceIsStaleAndLeavesTheWholeRowAsStored) {
  const Rows stored = store_revision_2();
  for (int send_no = 1; send_no <= 2; ++send_no) {
    SCOPED_TRACE("send " + std::to_string(send_no));
    EXPECT_EQ(counts_text(send("tx-1,1,125.00,acct-1,2024-05-01T10:00:00Z\n").counts), "stale 1");
    EXPECT_EQ(state_row(db_, "tx-1"), stored);
  }
  EXPECT_EQ(count("transaction_state"), "1");
  EXPECT_EQ(count("outbox"), "1");
  EXPECT_EQ(count("quarantine"), "0");
}

TEST_F(CommitTest, HigherRevisionSentTwiceIsUpdatedOnceThenUnchanged) {
  const Rows stored = store_revision_2();
  EXPECT_EQ(counts_text(send("tx-1,3,135.00,acct-1,2024-05-01T11:00:00Z\n").counts), "updated 1");
  const Rows updated = state_row(db_, "tx-1");
  ASSERT_EQ(updated.size(), 1u);
  EXPECT_EQ(std::vector<std::string>(updated[0].begin(), updated[0].begin() + 6),
            (std::vector<std::string>{"tx-1", "3", "135.00", "acct-1", "2024-05-01 11:00:00", "p"}));
  EXPECT_EQ(updated[0][6], stored[0][6]);  // created_at: the same row, updated in place

  EXPECT_EQ(counts_text(send("tx-1,3,135.00,acct-1,2024-05-01T11:00:00Z\n").counts), "unchanged 1");
  EXPECT_EQ(state_row(db_, "tx-1"), updated);
  EXPECT_EQ(count("transaction_state"), "1");
  EXPECT_EQ(count("outbox"), "2");  // the insert and the one update
  EXPECT_EQ(count("quarantine"), "0");
}

TEST_F(CommitTest, SameRevisionWithAConflictingPayloadIsQuarantinedAndTheStoredRowUntouched) {
  const Rows stored = store_revision_2();
  // Each field of the payload: amount, account_id, occurred_at.
  const std::vector<std::string> conflicting = {
      "tx-1,2,131.00,acct-1,2024-05-01T10:00:00Z",
      "tx-1,2,130.00,acct-2,2024-05-01T10:00:00Z",
      "tx-1,2,130.00,acct-1,2024-05-01T10:00:01Z",
      "tx-1,2,130.00,,2024-05-01T10:00:00Z",
  };
  Rows expected_quarantine;
  for (const auto& line : conflicting) {
    for (int send_no = 1; send_no <= 2; ++send_no) {
      SCOPED_TRACE(line + ", send " + std::to_string(send_no));
      const RunSummary summary = send(line + "\n");
      EXPECT_EQ(counts_text(summary.counts), "conflict 1");
      EXPECT_EQ(state_row(db_, "tx-1"), stored);
      // Each send is a new delivery (a new file), so each is quarantined where it was found.
      const std::string position =
          "send-" + std::to_string(sends_) + ".csv:2 (byte " + std::to_string(std::string(kHeader).size()) + ")";
      expected_quarantine.push_back(
          {"p", "conflict", "tx-1", "2", line, "<null>", "csv", position, std::to_string(summary.run_id), "<null>"});
    }
  }
  EXPECT_EQ(query_rows(db_,
                       "SELECT pipeline, reason, transaction_id, source_revision, raw, raw_bytes, format, position, "
                       "run_id, released_at FROM quarantine ORDER BY id"),
            expected_quarantine);
  EXPECT_THAT(db_.scalar("SELECT detail FROM quarantine ORDER BY id LIMIT 1"), ::testing::HasSubstr("tx-1"));
  EXPECT_EQ(count("transaction_state"), "1");
  EXPECT_EQ(count("outbox"), "1");
}

TEST_F(CommitTest, AmountAndTimestampInAnotherSpellingAreTheSamePayloadNotAConflict) {
  const Rows stored = store_revision_2();
  // 130.0 = 130.00, and 12:00+02:00 is the stored 10:00Z.
  EXPECT_EQ(counts_text(send("tx-1,2,130.0,acct-1,2024-05-01T12:00:00+02:00\n").counts), "unchanged 1");
  EXPECT_EQ(state_row(db_, "tx-1"), stored);
  // In one batch, the two spellings are one record sent twice.
  EXPECT_EQ(counts_text(send("tx-2,1,5.5,,\ntx-2,1,5.50,,\n").counts), "inserted 1, duplicate 1");
  // Absent account and timestamp compare equal to the stored NULLs.
  EXPECT_EQ(counts_text(send("tx-2,1,5.50,,\n").counts), "unchanged 1");
  EXPECT_EQ(count("quarantine"), "0");
}

// --- Several records of one key in one batch. ---

TEST_F(CommitTest, SeveralRevisionsOfOneKeyInABatchApplyTheHighestAndSupersedeTheOthers) {
  const RunSummary summary = send("tx-9,1,100.00,acct-9,\ntx-9,3,300.00,acct-9,\ntx-9,2,200.00,acct-9,\n");
  EXPECT_EQ(counts_text(summary.counts), "inserted 1, superseded 2");
  const Rows row = state_row(db_, "tx-9");
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(std::vector<std::string>(row[0].begin(), row[0].begin() + 6),
            (std::vector<std::string>{"tx-9", "3", "300.00", "acct-9", "<null>", "p"}));
  // Only the applied revision is an effect.
  EXPECT_EQ(query_rows(db_, "SELECT idempotency_key, payload->>'previous_amount' FROM outbox"),
            (Rows{{"ledger:tx-9:3", "<null>"}}));
}

TEST_F(CommitTest, LowerRevisionsBesideAHigherOneAreSupersededEvenWhenTheyEqualTheStoredRow) {
  store_revision_2();
  // Revision 2 equals the stored row and revision 1 trails it, but revision 4 is in the batch.
  EXPECT_EQ(counts_text(send("tx-1,1,125.00,acct-1,2024-05-01T10:00:00Z\n" + std::string(kStored) +
                             "tx-1,4,140.00,acct-1,2024-05-01T10:00:00Z\n")
                            .counts),
            "updated 1, superseded 2");
  const Rows row = state_row(db_, "tx-1");
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(std::vector<std::string>(row[0].begin(), row[0].begin() + 3),
            (std::vector<std::string>{"tx-1", "4", "140.00"}));
}

TEST_F(CommitTest, ExactDuplicatesInABatchAreCountedOnceAndTheRestAreDuplicates) {
  // Of identical records only the first is compared: a duplicate of a superseded record is
  // a duplicate, not superseded.
  EXPECT_EQ(counts_text(send("tx-5,1,1.00,,\ntx-5,1,1.00,,\ntx-5,1,1.00,,\n"
                             "tx-6,1,1.00,,\ntx-6,1,1.00,,\ntx-6,2,2.00,,\n")
                            .counts),
            "inserted 2, superseded 1, duplicate 3");
  EXPECT_EQ(query_rows(db_, "SELECT transaction_id, source_revision, amount FROM transaction_state ORDER BY 1"),
            (Rows{{"tx-5", "1", "1.00"}, {"tx-6", "2", "2.00"}}));
  EXPECT_EQ(count("outbox"), "2");
}

// --- Conflict precedence. ---

TEST_F(CommitTest, RecordConflictingWithTheStoredRowIsAConflictEvenBesideAHigherRevisionWhichIsApplied) {
  const Rows stored = store_revision_2();
  const RunSummary summary =
      send("tx-1,2,131.00,acct-1,2024-05-01T10:00:00Z\ntx-1,3,135.00,acct-1,2024-05-01T10:00:00Z\n");
  EXPECT_EQ(counts_text(summary.counts), "updated 1, conflict 1");
  const Rows row = state_row(db_, "tx-1");
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(std::vector<std::string>(row[0].begin(), row[0].begin() + 3),
            (std::vector<std::string>{"tx-1", "3", "135.00"}));
  EXPECT_EQ(query_rows(db_, "SELECT reason, transaction_id, source_revision, raw FROM quarantine"),
            (Rows{{"conflict", "tx-1", "2", "tx-1,2,131.00,acct-1,2024-05-01T10:00:00Z"}}));
  EXPECT_EQ(query_rows(db_, "SELECT idempotency_key, payload->>'previous_amount' FROM outbox ORDER BY id"),
            (Rows{{"ledger:tx-1:2", "<null>"}, {"ledger:tx-1:3", "130.00"}}));
}

TEST_F(CommitTest, InBatchSameRevisionConflictQuarantinesEveryRecordOfThatRevision) {
  // tx-7: its revision 1 conflicts, revision 2 is applied. tx-8: its highest revision
  // conflicts, so revision 1, the highest one not rejected, is applied.
  const RunSummary summary = send(
      "tx-7,1,1.00,,\ntx-7,1,2.00,,\ntx-7,2,3.00,,\n"
      "tx-8,1,1.00,,\ntx-8,2,2.00,,\ntx-8,2,3.00,,\n");
  EXPECT_EQ(counts_text(summary.counts), "inserted 2, conflict 4");
  EXPECT_EQ(query_rows(db_, "SELECT transaction_id, source_revision, amount FROM transaction_state ORDER BY 1"),
            (Rows{{"tx-7", "2", "3.00"}, {"tx-8", "1", "1.00"}}));
  EXPECT_EQ(query_rows(db_, "SELECT reason, raw FROM quarantine ORDER BY id"),
            (Rows{{"conflict", "tx-7,1,1.00,,"},
                  {"conflict", "tx-7,1,2.00,,"},
                  {"conflict", "tx-8,2,2.00,,"},
                  {"conflict", "tx-8,2,3.00,,"}}));
}

TEST_F(CommitTest, RejectedRevisionsNeverHideAValidOne) {
  // docs/cli.md "Outcomes": the candidate of a key is its highest revision that is neither
  // invalid nor in conflict, in the batch or with the stored row.
  EXPECT_EQ(counts_text(send("T2,1,10.00,,\nT2,2,20.00,,\nT2,2,21.00,,\nT1,1,10.00,,\nT1,2,NaN,,\n").counts),
            "inserted 2, invalid 1, conflict 2");
  EXPECT_EQ(query_rows(db_, "SELECT transaction_id, source_revision, amount FROM transaction_state ORDER BY 1"),
            (Rows{{"T1", "1", "10.00"}, {"T2", "1", "10.00"}}));
  // Stored T at revision 2 with payload A; the batch T,1 + T,2 (payload B): stale, conflict.
  EXPECT_EQ(counts_text(send("T,2,20.00,,\n").counts), "inserted 1");
  EXPECT_EQ(counts_text(send("T,1,10.00,,\nT,2,25.00,,\n").counts), "stale 1, conflict 1");
  EXPECT_EQ(query_rows(db_, "SELECT source_revision, amount FROM transaction_state WHERE transaction_id = 'T'"),
            (Rows{{"2", "20.00"}}));
  EXPECT_EQ(count("outbox"), "3");
}

// --- The outbox. ---

TEST_F(CommitTest, OutboxHasOneRowPerAcceptedChangePerDestinationWithGaplessPerAccountSequences) {
  const std::vector<std::string> destinations = {"ledger", "audit"};
  // Batches of 2: the account sequence must continue across batches and across runs.
  EXPECT_EQ(counts_text(send("tx-1,1,10.00,acct-A,\n"   // acct-A 1
                             "tx-2,1,20.00,acct-A,\n"   // acct-A 2
                             "tx-3,1,30.00,,\n"         // tx-3 (no account) 1
                             "tx-1,2,11.00,acct-A,\n"   // acct-A 3
                             "tx-4,1,40.00,acct-B,\n"   // acct-B 1
                             "tx-2,1,20.00,acct-A,\n",  // unchanged: no effect
                             2, destinations)
                            .counts),
            "inserted 4, updated 1, unchanged 1");
  EXPECT_EQ(counts_text(send("tx-5,1,50.00,acct-A,\n"   // acct-A 4
                             "tx-3,2,31.00,,\n"         // tx-3 2
                             "tx-1,2,11.00,acct-A,\n",  // unchanged
                             2, destinations)
                            .counts),
            "inserted 1, updated 1, unchanged 1");

  // (transaction, revision, partition key, sequence, amount, previous amount, account as JSON)
  const std::vector<std::vector<std::string>> changes = {
      {"tx-1", "1", "acct-A", "1", "10.00", "null", "\"acct-A\""},
      {"tx-2", "1", "acct-A", "2", "20.00", "null", "\"acct-A\""},
      {"tx-3", "1", "tx-3", "1", "30.00", "null", "null"},
      {"tx-1", "2", "acct-A", "3", "11.00", "\"10.00\"", "\"acct-A\""},
      {"tx-4", "1", "acct-B", "1", "40.00", "null", "\"acct-B\""},
      {"tx-5", "1", "acct-A", "4", "50.00", "null", "\"acct-A\""},
      {"tx-3", "2", "tx-3", "2", "31.00", "\"30.00\"", "null"},
  };
  Rows expected;
  for (const auto& destination : {"audit", "ledger"}) {
    for (const auto& c : changes) {
      const std::string key = std::string(destination) + ":" + c[0] + ":" + c[1];
      expected.push_back({destination, key, c[2], c[3], "\"" + key + "\"", "\"" + c[0] + "\"", c[1],
                          "\"" + c[4] + "\"", c[5], c[6], c[3], "pending", "0"});
    }
  }
  // JSON values as jsonb text, so that a string amount is told apart from a number.
  EXPECT_EQ(query_rows(db_,
                       "SELECT destination, idempotency_key, partition_key, sequence, payload->'event_id', "
                       "payload->'transaction_id', payload->'source_revision', payload->'amount', "
                       "payload->'previous_amount', payload->'account_id', payload->'sequence', status, attempts "
                       "FROM outbox ORDER BY destination, id"),
            expected);
  // Sequences per destination and partition, in commit order: 1, 2, 3… without gaps.
  EXPECT_EQ(query_rows(db_,
                       "SELECT destination, partition_key, string_agg(sequence::text, ',' ORDER BY id) "
                       "FROM outbox GROUP BY 1, 2 ORDER BY 1, 2"),
            (Rows{{"audit", "acct-A", "1,2,3,4"},
                  {"audit", "acct-B", "1"},
                  {"audit", "tx-3", "1,2"},
                  {"ledger", "acct-A", "1,2,3,4"},
                  {"ledger", "acct-B", "1"},
                  {"ledger", "tx-3", "1,2"}}));
}

TEST_F(CommitTest, APipelineWithoutTheDestinationTakesNoneOfItsSequenceNumbers) {
  // docs/rules.md rule 12: `orders` feeds ledger; `refunds` writes the same account and feeds
  // nothing, or only audit. The ledger's stream of AC-1 stays 1, 2, 3 with no gap.
  const auto run = [&](const std::string& pipeline, const std::string& records,
                       std::vector<std::string> destinations) {
    const auto path = dir_.write(pipeline + "-" + std::to_string(++sends_) + ".csv", kHeader + records);
    auto request = testing::file_request(db_, pipeline, path, 1000);
    request.destinations = std::move(destinations);
    return counts_text(pipeline::run_pipeline(request).counts);
  };
  EXPECT_EQ(run("orders", "o-1,1,10.00,AC-1,\n", {"ledger"}), "inserted 1");
  EXPECT_EQ(run("refunds", "r-1,1,-4.00,AC-1,\n", {}), "inserted 1");
  EXPECT_EQ(run("orders", "o-2,1,20.00,AC-1,\n", {"ledger"}), "inserted 1");
  EXPECT_EQ(run("refunds", "r-2,1,-1.00,AC-1,\n", {"audit"}), "inserted 1");
  EXPECT_EQ(run("orders", "o-3,1,5.00,AC-1,\n", {"ledger", "audit"}), "inserted 1");
  EXPECT_EQ(query_rows(db_,
                       "SELECT destination, string_agg((payload->>'transaction_id') || '=' || sequence, ',' ORDER BY id) "
                       "FROM outbox GROUP BY 1 ORDER BY 1"),
            (Rows{{"audit", "r-2=1,o-3=2"}, {"ledger", "o-1=1,o-2=2,o-3=3"}}));
  // The log holds one change per change that feeds a destination, numbered in its key; the
  // destinations' own sequences above are counted at read among the changes each is fed.
  EXPECT_EQ(query_rows(db_, "SELECT event_key, key_sequence, destinations FROM tidemark_change ORDER BY position"),
            (Rows{{"o-1:1", "1", "{ledger}"}, {"o-2:1", "2", "{ledger}"}, {"r-2:1", "3", "{audit}"},
                  {"o-3:1", "4", "{ledger,audit}"}}));
}

// --- Transient database errors. ---

TEST_F(CommitTest, BackendTerminatedBetweenBatchesIsRetriedOnANewConnectionAndTheRunCompletes) {
  const auto path = dir_.write("in.csv", std::string(kHeader) +
                                             "tx-1,1,1.00,,\ntx-2,1,2.00,,\ntx-3,1,3.00,,\ntx-4,1,4.00,,\n");
  auto request = testing::file_request(db_, "p", path, 2);
  int terminated = 0;
  // After batch 1 has committed, the committer's first session is idle; its second holds
  // batch 2, staged ahead, or is idle until batch 2.
  request.on_batch = [&](const BatchReport& report) {
    if (report.batch_no == 1) terminated = testing::terminate_tidemark_backends(db_);
  };
  const RunSummary summary = pipeline::run_pipeline(request);
  EXPECT_EQ(terminated, 2);
  EXPECT_EQ(summary.batches, 2u);
  EXPECT_EQ(counts_text(summary.counts), "inserted 4");
  EXPECT_EQ(query_rows(db_, "SELECT batch_no, input, inserted FROM batch_ledger ORDER BY batch_no"),
            (Rows{{"1", "2", "2"}, {"2", "2", "2"}}));
  EXPECT_EQ(count("transaction_state"), "4");
  EXPECT_EQ(count("outbox"), "4");
  EXPECT_EQ(db_.scalar("SELECT status FROM runs"), "succeeded");
}

// A partition's committer (docs/scale-out.md "Workers"): it commits while its worker owns the
// partition at its epoch, without the pipeline's lock (a second partition of the same pipeline
// commits beside it); once another worker has taken the partition its batch is refused whole
// (LeaseLost, not retried) and nothing of it is written, checkpoint included.
TEST_F(CommitTest, APartitionsBatchCommitsOnlyWhileItsWorkerOwnsThePartition) {
  const DirectBatch batch = direct_batch("tx-1,1,1.00,acct-1,\n", "p0.csv");
  const auto order = [](const Position& earlier, const Position& later) {
    return connectors::file::FilePosition::parse(earlier) < connectors::file::FilePosition::parse(later);
  };

  const PartitionLeases worker("a", "p", 2);
  auto control = db_.connect();
  const auto leases = worker.balance(*control);
  ASSERT_EQ(leases.size(), 2u);
  Committer first(db_.database(), "p", "ORDERS_0", {"ledger"}, testing::fast_retries(), order);
  Committer second(db_.database(), "p", "ORDERS_1", {"ledger"}, testing::fast_retries(), order);
  first.own_partition(worker, leases[0]);
  second.own_partition(worker, leases[1]);
  RunRequest run;
  run.pipeline = "p";
  const std::int64_t run_id = start_run(first.connection(), run);
  EXPECT_EQ(counts_text(first.commit(batch.whole(1), QuarantineOrigin{"csv"}, run_id).counts), "inserted 1");
  EXPECT_NO_THROW(second.connection()) << "no pipeline lock between the partitions of one worker";

  // Another worker takes partition 0 from a silent owner.
  db_.scalar("UPDATE tidemark_workers SET seen_at = now() - interval '1 hour' WHERE id = 'a'");
  const PartitionLeases taker("b", "p", 2);
  ASSERT_EQ(taker.balance(*control).size(), 2u);
  const auto checkpoint = count("checkpoint");
  const auto ledger = count("batch_ledger");
  EXPECT_THROW(first.commit(batch.whole(2), QuarantineOrigin{"csv"}, run_id), LeaseLost);
  EXPECT_EQ(count("checkpoint"), checkpoint);
  EXPECT_EQ(count("batch_ledger"), ledger);
}

// Staging ahead (docs/architecture.md): batch 2 is staged on the committer's second session
// while batch 1, staged on the first, is not yet committed. The two sessions hold the
// pipeline's two locks, so another run is refused while either of them lives.
TEST_F(CommitTest, BatchesStagedAheadOpenTheirTransactionsOnTwoSessionsThatEachHoldOneOfThePipelinesLocks) {
  const DirectBatch one = direct_batch("tx-1,1,1.00,acct-1,\n");
  const DirectBatch two = direct_batch("tx-2,1,2.00,acct-1,\n");
  testing::wait_for_no_tidemark_backends(db_.url());  // so that the counts below find only ours
  Committer committer(db_.database(), "p", "in", {"ledger"}, testing::fast_retries());
  committer.stage_batches_ahead();
  RunRequest run;
  run.pipeline = "p";
  const std::int64_t run_id = start_run(committer.connection(), run);
  BatchInput first{one.decoded, one.validated, one.plan, 1, ""};
  BatchInput second{two.decoded, two.validated, two.plan, 2, ""};
  StagedBatch staged1 = committer.stage_ahead(first);
  StagedBatch staged2 = committer.stage_ahead(second);
  ASSERT_TRUE(staged1 && staged2);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND application_name LIKE 'tidemark%' AND state = 'idle in transaction'"),
            "2");
  first.staged = &staged1;
  second.staged = &staged2;
  EXPECT_EQ(counts_text(committer.commit(first, QuarantineOrigin{"csv"}, run_id).counts), "inserted 1");
  EXPECT_EQ(counts_text(committer.commit(second, QuarantineOrigin{"csv"}, run_id).counts), "inserted 1");
  EXPECT_EQ(query_rows(db_, "SELECT partition_key, sequence, payload->>'transaction_id' FROM outbox ORDER BY id"),
            (Rows{{"acct-1", "1", "tx-1"}, {"acct-1", "2", "tx-2"}}));

  Committer other(db_.database(), "p", "in", {"ledger"}, testing::fast_retries());
  EXPECT_THROW(other.connection(), PipelineBusy);
  // The first session gone (its lock with it), the second still holds the second lock.
  const std::string sessions = "SELECT string_agg(pid::text, ',') FROM pg_stat_activity "
                               "WHERE datname = current_database() AND application_name LIKE 'tidemark%'";
  const std::string first_pid = std::to_string(committer.open_connection()->backendpid());
  db_.scalar("SELECT pg_terminate_backend(" + first_pid + ")");
  testing::wait_for_tidemark_backends(db_.url(), 1);
  const std::string left = db_.scalar(sessions);
  ASSERT_NE(left, first_pid);
  Committer after_loss(db_.database(), "p", "in", {"ledger"}, testing::fast_retries());
  try {
    after_loss.connection();
    ADD_FAILURE() << "a second run took the pipeline while the first run's second session holds it";
  } catch (const PipelineBusy& busy) {
    EXPECT_THAT(busy.what(), ::testing::HasSubstr("backend pid " + left + " "));
  }
}

// A run that lost both of its sessions finds, when it reconnects, that another run has taken
// the pipeline. If that run then loses its own first session, and with it the first lock, the
// first run takes that lock back on reconnecting; but the other run's start ended it, so its
// batch is refused whole (RunEnded, not retried) instead of committing beside the other run's.
TEST_F(CommitTest, ARunEndedByAnotherWhileItsSessionsWereLostCommitsNoBatchBesideIt) {
  const DirectBatch one = direct_batch("tx-1,1,1.00,acct-1,\n");
  const DirectBatch three = direct_batch("tx-3,1,3.00,acct-1,\n");
  testing::wait_for_no_tidemark_backends(db_.url());  // so that the counts below find only ours
  RunRequest run;
  run.pipeline = "p";
  Committer first_run(db_.database(), "p", "in", {"ledger"}, testing::fast_retries());
  first_run.stage_batches_ahead();
  const std::int64_t first_id = start_run(first_run.connection(), run);
  EXPECT_EQ(counts_text(first_run.commit({one.decoded, one.validated, one.plan, 1, ""}, QuarantineOrigin{"csv"},
                                         first_id).counts),
            "inserted 1");
  EXPECT_EQ(testing::terminate_tidemark_backends(db_), 2);
  testing::wait_for_no_tidemark_backends(db_.url());

  Committer second_run(db_.database(), "p", "in", {"ledger"}, testing::fast_retries());
  second_run.stage_batches_ahead();
  start_run(second_run.connection(), run);
  db_.scalar("SELECT pg_terminate_backend(" + std::to_string(second_run.open_connection()->backendpid()) + ")");
  testing::wait_for_tidemark_backends(db_.url(), 1);

  // Batch 3 commits on the first session, which reconnects and takes the free first lock.
  const std::string ledger = count("batch_ledger");
  try {
    first_run.commit({three.decoded, three.validated, three.plan, 3, ""}, QuarantineOrigin{"csv"}, first_id);
    ADD_FAILURE() << "a run ended by another committed a batch beside it";
  } catch (const RunEnded& ended) {
    EXPECT_THAT(ended.what(), ::testing::HasSubstr("run " + std::to_string(first_id) + " of pipeline p is no longer "
                                                   "running (its status is failed)"));
  }
  EXPECT_EQ(count("batch_ledger"), ledger);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM transaction_state WHERE transaction_id = 'tx-3'"), "0");
}

TEST_F(CommitTest, RetryOfABatchWhoseLedgerRowExistsIsReadBackNotAppliedAgain) {
  // When a COMMIT's acknowledgement is lost, the committer cannot know whether the batch
  // is in. Killing the backend inside COMMIT is not reproducible from a test, so this
  // reproduces what the committer sees on its retry: the batch (run_id, batch_no) has
  // committed, the connection is then lost, and the same batch is committed again. Its
  // first attempt fails on the dead connection; the retry must find the ledger row, report
  // the ledger's counts as recovered, and apply nothing a second time.
  const DirectBatch direct = direct_batch("tx-1,1,1.00,acct-1,\ntx-2,1,2.00,acct-1,\nbad,1,1e3,,\n", "direct.csv");

  testing::wait_for_no_tidemark_backends(db_.url());  // so that the terminate below finds only ours
  Committer committer(db_.database(), "p", "direct", {"ledger"}, testing::fast_retries(),
                      [](const Position& earlier, const Position& later) {
                        return connectors::file::FilePosition::parse(earlier) < connectors::file::FilePosition::parse(later);
                      });
  RunRequest run;
  run.pipeline = "p";
  const std::int64_t run_id = start_run(committer.connection(), run);
  const BatchInput batch = direct.whole(1);
  const QuarantineOrigin origin{"csv"};

  const BatchResult first = committer.commit(batch, origin, run_id);
  EXPECT_FALSE(first.recovered);
  EXPECT_EQ(counts_text(first.counts), "inserted 2, invalid 1");
  const auto snapshot = [&] {
    return std::vector<Rows>{query_rows(db_, "SELECT * FROM transaction_state ORDER BY 1"),
                             query_rows(db_, "SELECT * FROM outbox ORDER BY id"),
                             query_rows(db_, "SELECT * FROM quarantine ORDER BY id"),
                             query_rows(db_, "SELECT * FROM tidemark_partition_sequence ORDER BY 1"),
                             query_rows(db_, "SELECT * FROM batch_ledger ORDER BY id"),
                             query_rows(db_, "SELECT * FROM checkpoint ORDER BY 1, 2")};
  };
  const auto before = snapshot();

  EXPECT_EQ(testing::terminate_tidemark_backends(db_), 1);
  const BatchResult again = committer.commit(batch, origin, run_id);
  EXPECT_TRUE(again.recovered);
  EXPECT_EQ(counts_text(again.counts), "inserted 2, invalid 1");
  EXPECT_TRUE(again.outcomes.empty());
  EXPECT_EQ(snapshot(), before);
}

// "Never backwards" is the source's order of its opaque positions, not a rule of
// the store. Here a source that counts down ("9" comes before "8"): a text or number order
// would keep "9" against "8" and let "10" through.
TEST_F(CommitTest, CheckpointMovesOnlyWhereTheSourcesOwnOrderSaysForward) {
  Committer committer(db_.database(), "p", "countdown", {}, testing::fast_retries(),
                      [](const Position& earlier, const Position& later) {
                        return std::stoi(later.text) < std::stoi(earlier.text);
                      });
  RunRequest run;
  run.pipeline = "p";
  const std::int64_t run_id = start_run(committer.connection(), run);
  const std::vector<DecodedRecord> decoded;
  const std::vector<Checked> validated;
  const BatchPlan plan = plan_batch(validated);
  int batch_no = 0;
  const auto commit_to = [&](const std::string& end) {
    committer.commit({decoded, validated, plan, ++batch_no, "", Position{end}}, {"countdown"}, run_id);
    return db_.scalar("SELECT position FROM checkpoint WHERE pipeline = 'p' AND source = 'countdown'");
  };
  EXPECT_EQ(commit_to("9"), "9");   // no row yet: written
  EXPECT_EQ(commit_to("8"), "8");   // forward for this source
  EXPECT_EQ(commit_to("10"), "8");  // backwards for this source: kept
  EXPECT_EQ(commit_to("8"), "8");
  // Each batch still has its ledger row, with the end it was read to.
  EXPECT_EQ(query_rows(db_, "SELECT batch_no, end_position FROM batch_ledger ORDER BY batch_no"),
            (Rows{{"1", "9"}, {"2", "8"}, {"3", "10"}, {"4", "8"}}));
}

}  // namespace
}  // namespace tidemark::pipeline
