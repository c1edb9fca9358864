// Quarantine entries and their release against a real PostgreSQL ("Tests:
// Integration"): records are kept exactly as received, and a release re-decodes and
// re-validates them through the same plan and commit path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "connectors/file/file_record_decoder.hpp"
#include "pipeline/run/quarantine_release.hpp"
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

constexpr char kHeaderLine[] = "transaction_id,source_revision,amount,account_id";
const std::string kHeader = std::string(kHeaderLine) + "\n";

// What a release must reproduce: everything but the id, the position and the run.
constexpr char kEntryColumns[] =
    "pipeline, reason, detail, transaction_id, source_revision, raw, encode(raw_bytes, 'hex'), format, decode_context";
// What a release records on the entry it releases.
constexpr char kReleaseColumns[] = "released_at IS NOT NULL, released_by, release_outcome";

class QuarantineTest : public ::testing::Test {
 protected:
  RunSummary send(const std::string& name, const std::string& text,
                  connectors::file::Format format = connectors::file::Format::kCsv) {
    return pipeline::run_pipeline(file_request(db_, "p", dir_.write(name, text), 1000, false, format));
  }
  std::int64_t latest_entry() const { return std::stoll(db_.scalar("SELECT max(id) FROM quarantine")); }
  Rows entry(std::int64_t id, const std::string& columns) const {
    return query_rows(db_, "SELECT " + columns + " FROM quarantine WHERE id = " + std::to_string(id));
  }
  ReleaseResult release(std::int64_t id) {
    // The release takes the pipeline's lock: wait for the previous run to let go of it.
    testing::wait_for_no_tidemark_backends(db_.url());
    db::Database database(db_.url());
    return release_quarantined(database, id, {"ledger"}, "tester", decoder_, testing::fast_retries());
  }
  // Releases the entry `id` of an invalid record: it must be quarantined again, identically.
  void expect_released_as_invalid_again(std::int64_t id) {
    const Rows before = entry(id, kEntryColumns);
    const std::string state = db_.scalar("SELECT count(*) FROM transaction_state");
    const ReleaseResult result = release(id);
    EXPECT_EQ(result.outcome, Outcome::kInvalid);
    const std::int64_t again = latest_entry();
    EXPECT_GT(again, id);
    EXPECT_EQ(entry(again, kEntryColumns), before);
    EXPECT_EQ(entry(again, "run_id, released_at"),
              (Rows{{std::to_string(result.run_id), "<null>"}}));
    EXPECT_EQ(entry(id, kReleaseColumns), (Rows{{"t", "tester", "invalid"}}));
    EXPECT_EQ(db_.scalar("SELECT count(*) FROM transaction_state"), state);
  }

  TestDatabase db_;
  TempDir dir_;
  connectors::file::FileRecordDecoder decoder_;
};

TEST_F(QuarantineTest, CsvRecordWithAnEmbeddedNewlineIsKeptAsReceivedAndReleasedIdentically) {
  const std::string line2 = "tx-1,1,10.00,\n";
  const std::string record = "\"tx\nnl\",1,5.00,";  // a control character in the id
  const std::string text = kHeader + line2 + record + "\n" + "tx-3,1,1e3,\n";
  const RunSummary summary = send("in.csv", text);
  EXPECT_EQ(counts_text(summary.counts), "inserted 1, invalid 2");

  const std::size_t record_byte = kHeader.size() + line2.size();
  const std::size_t next_byte = record_byte + record.size() + 1;
  const Rows entries = query_rows(
      db_, "SELECT " + std::string(kEntryColumns) + ", position, run_id, released_at FROM quarantine ORDER BY id");
  ASSERT_EQ(entries.size(), 2u);
  // The record spans lines 3 and 4, so the next one starts on line 5.
  EXPECT_EQ(entries[0][1], "invalid");
  EXPECT_THAT(entries[0][2], ::testing::StartsWith("transaction_id"));
  // An invalid record keeps the key it claimed (column 3) and its valid revision, for searching.
  EXPECT_EQ(std::vector<std::string>(entries[0].begin() + 3, entries[0].end()),
            (std::vector<std::string>{"tx\nnl", "1", record, "<null>", "csv", kHeaderLine,
                                      "in.csv:3 (byte " + std::to_string(record_byte) + ")",
                                      std::to_string(summary.run_id), "<null>"}));
  EXPECT_EQ(entries[1][5], "tx-3,1,1e3,");
  EXPECT_EQ(entries[1][9], "in.csv:5 (byte " + std::to_string(next_byte) + ")");

  expect_released_as_invalid_again(latest_entry() - 1);
}

// serve's API hands a release its Database, whose pool has a connection open already: the
// release reads the entry on it, and opens only the commit's session (before issue 37 it
// opened a connection of its own too).
TEST_F(QuarantineTest, AReleaseOpensOnlyTheCommitsSessionBesideItsDatabasesPool) {
  send("in.csv", kHeader + "tx-1,1,not-a-number,\n");
  const std::int64_t id = latest_entry();
  testing::wait_for_no_tidemark_backends(db_.url());
  db::Database database(db_.url());
  // The pooled session reports its own start now, not while the release runs.
  database.with_connection("warming the pool", [](pqxx::connection& connection) {
    pqxx::nontransaction(connection).exec("SELECT pg_stat_force_next_flush()");
  });

  ReleaseResult result;
  const std::int64_t opened = testing::sessions_opened_by(
      db_.url(),
      [&] { result = release_quarantined(database, id, {"ledger"}, "tester", decoder_, testing::fast_retries()); },
      /*kept=*/1);
  EXPECT_EQ(result.outcome, Outcome::kInvalid);
  EXPECT_EQ(opened, 1);
}

TEST_F(QuarantineTest, CsvRecordWithInvalidUtf8AndNulBytesKeepsItsExactBytesAndIsReleasedIdentically) {
  const std::string record = std::string("tx\xFF", 3) + std::string(1, '\0') + "z,1,5.00,";
  EXPECT_EQ(counts_text(send("in.csv", kHeader + record + "\n").counts), "invalid 1");
  const std::int64_t id = latest_entry();
  // The text column holds U+FFFD for each byte it cannot; raw_bytes holds what was received.
  EXPECT_EQ(entry(id, "raw, encode(raw_bytes, 'hex')"),
            (Rows{{"tx\xEF\xBF\xBD\xEF\xBF\xBDz,1,5.00,", "7478ff007a2c312c352e30302c"}}));
  expect_released_as_invalid_again(id);
}

// A Latin-1 header (0xE9 is "é") is stored escaped, and a release decodes
// with the header's own bytes, so the entry it quarantines again is identical.
TEST_F(QuarantineTest, CsvRecordUnderALatin1HeaderIsQuarantinedWithTheHeaderEscapedAndReleasedIdentically) {
  const std::string header = kHeader.substr(0, kHeader.size() - 1) + ",r\xE9" "f\n";
  EXPECT_EQ(counts_text(send("in.csv", header + "tx-1,1,NaN,,x\n").counts), "invalid 1");
  const std::int64_t id = latest_entry();
  EXPECT_EQ(entry(id, "decode_context"), (Rows{{std::string(kHeaderLine) + ",r\\xe9f"}}));
  expect_released_as_invalid_again(id);
}

TEST_F(QuarantineTest, JsonLineWithInvalidUtf8KeepsItsExactBytesAndIsReleasedIdentically) {
  const std::string line = std::string("{\"transaction_id\":\"a\xC3(b\",\"source_revision\":1,\"amount\":\"1.00\"}");
  EXPECT_EQ(counts_text(send("in.jsonl", line + "\n", connectors::file::Format::kJsonl).counts), "invalid 1");
  const std::int64_t id = latest_entry();
  EXPECT_EQ(entry(id, "format, decode_context, position, raw_bytes IS NOT NULL"),
            (Rows{{"jsonl", "", "in.jsonl:1 (byte 0)", "t"}}));
  expect_released_as_invalid_again(id);
}

// A released record keeps its original position, in its new entry and in
// the release's ledger row, whose source is "quarantine"; released and rejected again, the
// entry is not dropped as a duplicate of the released one. Its new entry keeps the entry's
// source too, so that a replay finds it.
TEST_F(QuarantineTest, ReleasedRecordRejectedAgainKeepsItsOriginalPositionEveryTime) {
  EXPECT_EQ(counts_text(send("in.csv", kHeader + "tx-1,1,10.00,\n" + "tx-2,1,NaN,\n").counts),
            "inserted 1, invalid 1");
  const std::int64_t first = latest_entry();
  const std::string position = entry(first, "position").at(0).at(0);
  const std::string source = entry(first, "source").at(0).at(0);
  EXPECT_EQ(position, "in.csv:3 (byte " + std::to_string(kHeader.size() + 14) + ")");
  for (std::int64_t id = first; id < first + 2; ++id) {
    SCOPED_TRACE("release of entry " + std::to_string(id));
    const ReleaseResult result = release(id);
    EXPECT_EQ(result.outcome, Outcome::kInvalid);
    ASSERT_EQ(latest_entry(), id + 1);
    EXPECT_EQ(entry(id + 1, "source, position, reason, released_at"),
              (Rows{{source, position, "invalid", "<null>"}}));
    EXPECT_EQ(query_rows(db_, "SELECT source, start_position, end_position, invalid FROM batch_ledger"
                              " WHERE run_id = " + std::to_string(result.run_id)),
              (Rows{{"quarantine", position, position, "1"}}));
  }
}

// An invalid record shows its revision whenever that field itself was valid.
TEST_F(QuarantineTest, InvalidRecordShowsItsRevisionOnlyWhenThatFieldWasValid) {
  EXPECT_EQ(counts_text(send("in.csv", kHeader + "tx-1,7,NaN,\n" + "tx-2,x7,1.00,\n" + "tx-3,,1.00,\n" +
                                           "tx\x01" "4,8,1.00,\n").counts),
            "invalid 4");
  EXPECT_EQ(query_rows(db_, "SELECT source_revision, field FROM quarantine ORDER BY id"),
            (Rows{{"7", "amount"}, {"<null>", "source_revision"}, {"<null>", "source_revision"},
                  {"8", "transaction_id"}}));
}

TEST_F(QuarantineTest, ConflictReleasedAfterAHigherRevisionWasStoredBecomesStale) {
  send("1.csv", kHeader + "tx-1,2,130.00,acct-1\n");
  EXPECT_EQ(counts_text(send("2.csv", kHeader + "tx-1,2,999.00,acct-1\n").counts), "conflict 1");
  const std::int64_t id = latest_entry();
  EXPECT_EQ(counts_text(send("3.csv", kHeader + "tx-1,3,135.00,acct-1\n").counts), "updated 1");

  const auto untouched = [&] {
    return std::vector<Rows>{query_rows(db_, "SELECT * FROM transaction_state ORDER BY 1"),
                             query_rows(db_, "SELECT * FROM outbox ORDER BY id"),
                             query_rows(db_, "SELECT * FROM checkpoint ORDER BY 1, 2")};
  };
  const auto before = untouched();
  const ReleaseResult result = release(id);
  EXPECT_EQ(result.outcome, Outcome::kStale);
  EXPECT_EQ(untouched(), before);
  EXPECT_EQ(entry(id, kReleaseColumns), (Rows{{"t", "tester", "stale"}}));
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM quarantine"), "1");
  // The release is a run of its own, with a reconciled ledger row.
  EXPECT_EQ(query_rows(db_, "SELECT r.pipeline, r.status, l.source, l.input, l.stale FROM runs r "
                            "JOIN batch_ledger l ON l.run_id = r.id WHERE r.id = " +
                                std::to_string(result.run_id)),
            (Rows{{"p", "succeeded", "quarantine", "1", "1"}}));
}

TEST_F(QuarantineTest, ConflictReleasedWhileTheStoredRowStillDiffersIsQuarantinedAgainAsAConflict) {
  send("1.csv", kHeader + "tx-1,2,130.00,acct-1\n");
  send("2.csv", kHeader + "tx-1,2,999.00,acct-1\n");
  const std::int64_t id = latest_entry();
  const Rows stored = testing::state_row(db_, "tx-1");
  const Rows before = entry(id, kEntryColumns);
  EXPECT_EQ(release(id).outcome, Outcome::kConflict);
  EXPECT_EQ(entry(latest_entry(), kEntryColumns), before);
  EXPECT_EQ(entry(id, kReleaseColumns), (Rows{{"t", "tester", "conflict"}}));
  EXPECT_EQ(testing::state_row(db_, "tx-1"), stored);
}

TEST_F(QuarantineTest, InBatchConflictReleasedOneByOneInsertsTheFirstAndConflictsTheSecond) {
  EXPECT_EQ(counts_text(send("in.csv", kHeader + "tx-1,1,10.00,acct-1\ntx-1,1,11.00,acct-1\n").counts),
            "conflict 2");
  const std::int64_t first = latest_entry() - 1;
  const std::int64_t second = latest_entry();

  EXPECT_EQ(release(first).outcome, Outcome::kInserted);
  EXPECT_EQ(query_rows(db_, "SELECT transaction_id, source_revision, amount, account_id FROM transaction_state"),
            (Rows{{"tx-1", "1", "10.00", "acct-1"}}));
  // Accepted through the commit path: with its outbox row.
  EXPECT_EQ(query_rows(db_, "SELECT idempotency_key, partition_key, sequence FROM outbox"),
            (Rows{{"ledger:tx-1:1", "acct-1", "1"}}));
  EXPECT_EQ(entry(first, kReleaseColumns), (Rows{{"t", "tester", "inserted"}}));

  EXPECT_EQ(release(second).outcome, Outcome::kConflict);
  EXPECT_EQ(entry(second, kReleaseColumns), (Rows{{"t", "tester", "conflict"}}));
  EXPECT_EQ(entry(latest_entry(), "reason, raw"),
            (Rows{{"conflict", "tx-1,1,11.00,acct-1"}}));
  EXPECT_EQ(db_.scalar("SELECT amount FROM transaction_state"), "10.00");
}

// A folder named like one of its files is still a folder: the header kept is the record file's.
TEST_F(QuarantineTest, RecordOfAFolderSourceKeepsTheHeaderOfItsOwnFile) {
  // The folder has the name of the file inside it, and another file has other columns: the
  // header kept must be that of the record's file.
  const auto folder = dir_.path() / "in.csv";
  std::filesystem::create_directory(folder);
  dir_.write("in.csv/in.csv", kHeader + "tx-1,1,NaN,\n");
  dir_.write("in.csv/other.csv", "amount,transaction_id,source_revision\n1e3,tx-2,1\n");
  EXPECT_EQ(counts_text(pipeline::run_pipeline(file_request(db_, "p", folder)).counts), "invalid 2");
  EXPECT_EQ(query_rows(db_, "SELECT raw, decode_context, position FROM quarantine ORDER BY id"),
            (Rows{{"tx-1,1,NaN,", kHeaderLine, "in.csv:2 (byte " + std::to_string(kHeader.size()) + ")"},
                  {"1e3,tx-2,1", "amount,transaction_id,source_revision", "other.csv:2 (byte 38)"}}));
  expect_released_as_invalid_again(latest_entry());
}

TEST_F(QuarantineTest, ReleasingAnEntryTwiceOrAMissingEntryIsAConflict) {
  send("in.csv", kHeader + "tx-1,1,NaN,\n");
  const std::int64_t id = latest_entry();
  release(id);
  const Rows after_first = query_rows(db_, "SELECT * FROM quarantine ORDER BY id");
  const auto refusal = [&](std::int64_t entry) -> std::optional<tidemark::ErrorKind> {
    try {
      release(entry);
    } catch (const tidemark::Error& error) {
      return error.kind();
    }
    return std::nullopt;
  };
  EXPECT_EQ(refusal(id), tidemark::ErrorKind::kConflict);
  EXPECT_EQ(refusal(id + 1000), tidemark::ErrorKind::kConflict);
  EXPECT_EQ(query_rows(db_, "SELECT * FROM quarantine ORDER BY id"), after_first);
}

}  // namespace
}  // namespace tidemark::pipeline
