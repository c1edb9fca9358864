// Two pipelines writing the same keys at once (docs/rules.md rules 2 and 3 across
// pipelines): each holds its own pipeline lock, so their batches interleave. A batch that reads
// its keys' stored rows from a snapshot another batch then writes past must be retried, or
// its verdicts are wrong: a row counted `inserted` twice, a same-revision conflict missed.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "pipeline/store/pg/database.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::pipeline {
namespace {

using testing::query_rows;
using testing::Rows;
using testing::TempDir;
using testing::TestDatabase;

// Whatever order the two pipelines' batches commit in, per key:
//   same-payload keys  (both send revision 1, one payload): one `inserted`, one `unchanged`;
//   conflicting keys   (both send revision 1, two payloads): one `inserted`, one `conflict`
//                      quarantined, and the stored row is the payload that was not.
TEST(ConcurrentWriters, TwoPipelinesOnTheSameKeysNeverMislabelARecord) {
  const std::uint32_t seed = 20261201;
  std::cout << "seed " << seed << '\n';
  std::mt19937 random(seed);
  constexpr int kKeys = 1200;
  std::map<std::string, bool> conflicting;  // key -> whether the two pipelines disagree
  std::ostringstream a;
  std::ostringstream b;
  a << "transaction_id,source_revision,amount,account_id\n";
  b << "transaction_id,source_revision,amount,account_id\n";
  for (int k = 0; k < kKeys; ++k) {
    const std::string key = "k" + std::to_string(k);
    const bool conflict = random() % 4 == 0;
    conflicting[key] = conflict;
    a << key << ",1,1.00,acct-" << k % 7 << '\n';
    b << key << ",1," << (conflict ? "2.00" : "1.00") << ",acct-" << k % 7 << '\n';
  }
  TestDatabase db;
  TempDir dir;
  const auto path_a = dir.write("a.csv", a.str());
  const auto path_b = dir.write("b.csv", b.str());
  // Same keys in the same order, small batches: the two runs overlap on nearly every batch.
  auto request_a = testing::file_request(db, "alpha", path_a, 40);
  auto request_b = testing::file_request(db, "beta", path_b, 40);
  RunSummary summary_a;
  RunSummary summary_b;
  std::thread run_a([&] { summary_a = run_pipeline(request_a); });
  std::thread run_b([&] { summary_b = run_pipeline(request_b); });
  run_a.join();
  run_b.join();

  std::size_t conflicts = 0;
  for (const auto& [key, conflict] : conflicting) conflicts += conflict ? 1 : 0;
  const std::size_t agreeing = kKeys - conflicts;
  OutcomeCounts total = summary_a.counts;
  total += summary_b.counts;
  EXPECT_EQ(testing::counts_text(total),
            testing::counts_text([&] {
              OutcomeCounts expected;
              expected[Outcome::kInserted] = kKeys;
              expected[Outcome::kUnchanged] = agreeing;
              expected[Outcome::kConflict] = conflicts;
              return expected;
            }()))
      << "seed " << seed;
  // The ledger says the same as the runs.
  EXPECT_EQ(db.scalar("SELECT sum(inserted) || '/' || sum(unchanged) || '/' || sum(conflict) FROM batch_ledger"),
            std::to_string(kKeys) + "/" + std::to_string(agreeing) + "/" + std::to_string(conflicts));

  // Every conflicting key: exactly one record quarantined, and the stored row is the other.
  const Rows quarantined = query_rows(
      db,
      "SELECT q.transaction_id, count(*), min(q.pipeline), min(t.amount::text), "
      "min(split_part(q.raw, ',', 3)) FROM quarantine q JOIN transaction_state t USING (transaction_id) "
      "WHERE q.reason = 'conflict' GROUP BY 1 ORDER BY 1");
  ASSERT_EQ(quarantined.size(), conflicts);
  for (const auto& row : quarantined) {
    SCOPED_TRACE(row[0]);
    EXPECT_TRUE(conflicting.at(row[0]));
    EXPECT_EQ(row[1], "1");
    EXPECT_NE(row[3], row[4]);  // the stored amount is not the quarantined one
  }
  EXPECT_EQ(db.scalar("SELECT count(*) FROM transaction_state"), std::to_string(kKeys));
  // One effect per accepted change: the first writer of each key.
  EXPECT_EQ(db.scalar("SELECT count(*) FROM outbox"), std::to_string(kKeys));
}

TEST(ConcurrentWriters, SerializationFailuresAndDeadlocksFromTheServerAreRetried) {
  // libpqxx 6.4 throws these as transaction_rollback, which is not an sql_error.
  TestDatabase db;
  auto connection = db.connect();
  for (const char* state : {"40001", "40P01"}) {
    SCOPED_TRACE(state);
    try {
      pqxx::nontransaction txn(*connection);
      txn.exec(std::string("DO $$ BEGIN RAISE EXCEPTION 'test' USING ERRCODE = '") + state + "'; END $$");
      ADD_FAILURE() << "no error raised";
    } catch (const std::exception& error) {
      EXPECT_TRUE(db::is_transient(error)) << error.what();
    }
  }
  try {
    pqxx::nontransaction txn(*connection);
    txn.exec("SELECT 1/0");
    ADD_FAILURE() << "no error raised";
  } catch (const std::exception& error) {
    EXPECT_FALSE(db::is_transient(error)) << error.what();
  }
}

}  // namespace
}  // namespace tidemark::pipeline
