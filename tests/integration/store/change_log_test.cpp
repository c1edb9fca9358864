// The change log read per destination (migrations/0029_change_log.sql): a change is read when
// its transaction commits, whatever its position; each destination numbers only the changes
// that feed it; a revived dead letter holds nothing back; and a read that meets a cursor a
// claim holds reads the same changes again, so a head moved with an older snapshot strands
// nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sql/statements.hpp"
#include "tests/support/change_log.hpp"
#include "tests/support/change_log_store.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::pipeline {
namespace {

using testing::TestDatabase;

using testing::claim;
using testing::ClaimedEvent;
using testing::deliver_all;

// Appends `changes` for `destinations`, committed.
void append(pqxx::connection& connection, const std::vector<std::string>& destinations,
            const std::vector<testing::Change>& changes) {
  pqxx::work txn(connection);
  testing::append_changes(txn, destinations, changes);
  txn.commit();
}

void register_destinations(const TestDatabase& db, const std::vector<std::string>& destinations) {
  auto connection = db.connect();
  pqxx::work txn(*connection);
  testing::register_destinations(txn, destinations);
  txn.commit();
}

TEST(ChangeLog, AChangeWhosePositionWasTakenEarlyIsReadWhenItsTransactionCommits) {
  TestDatabase db;
  register_destinations(db, {"ledger"});
  auto early = db.connect();
  auto late = db.connect();
  auto relay = db.connect();

  pqxx::work open(*early);
  const auto first = testing::append_change(open, {"ledger"}, "acct-1", "t1:1", R"({"n": 1})");
  {
    pqxx::work txn(*late);
    const auto second = testing::append_change(txn, {"ledger"}, "acct-2", "t2:1", R"({"n": 2})");
    ASSERT_GT(second, first);
    txn.commit();
  }
  auto claimed = claim(*relay, {"ledger"});
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].idempotency_key, "ledger:t2:1");

  open.commit();
  claimed = claim(*relay, {"ledger"}, claimed);
  ASSERT_EQ(claimed.size(), 1u) << "the change of the transaction that committed last was not read";
  EXPECT_EQ(claimed[0].idempotency_key, "ledger:t1:1");
  EXPECT_EQ(claimed[0].sequence, 1);
}

// Every claim reads the log for new changes first. When nothing was logged since the last
// read, the read writes nothing (0032_relay_claim_plans.sql), although the server's snapshot
// has moved (other transactions took xids); a change whose transaction was open then is read
// once it commits.
TEST(ChangeLog, AReadWithNothingLoggedSinceWritesNothingAndMissesNothing) {
  TestDatabase db;
  auto relay = db.connect();
  append(*relay, {"ledger"}, {{"acct-1", "t1:1", R"({"n": 1})"}});
  ASSERT_EQ(deliver_all(*relay, {"ledger"}).size(), 1u);
  const auto written = [&db] { return db.scalar("SELECT xmin::text FROM tidemark_destination WHERE name = 'ledger'"); };
  const std::string read_before = written();

  auto writer = db.connect();
  pqxx::work open(*writer);
  testing::append_change(open, {"ledger"}, "acct-2", "t2:1", R"({"n": 2})");
  for (int i = 0; i < 3; ++i) db.scalar("SELECT pg_current_xact_id()::text");
  EXPECT_TRUE(claim(*relay, {"ledger"}).empty());
  EXPECT_EQ(written(), read_before) << "a read that found nothing new wrote the destination's snapshot";

  open.commit();
  const auto claimed = claim(*relay, {"ledger"});
  ASSERT_EQ(claimed.size(), 1u) << "the change committed after reads that found nothing was not read";
  EXPECT_EQ(claimed[0].idempotency_key, "ledger:t2:1");
  EXPECT_NE(written(), read_before);
}

TEST(ChangeLog, EachDestinationNumbersOnlyTheChangesThatFeedItWithNoGap) {
  TestDatabase db;
  auto connection = db.connect();
  append(*connection, {"audit", "ledger"}, {{"acct-1", "t1:1", R"({"n": 1})"}});
  append(*connection, {"ledger"}, {{"acct-1", "t2:1", R"({"n": 2})"}});
  append(*connection, {"audit"}, {{"acct-1", "t3:1", R"({"n": 3})"}});
  append(*connection, {"audit", "ledger"}, {{"acct-1", "t4:1", R"({"n": 4})"}});
  std::map<std::string, std::vector<std::string>> keys;
  std::map<std::string, std::vector<std::int64_t>> sequences;
  for (const auto& event : deliver_all(*connection, {"audit", "ledger"})) {
    keys[event.destination].push_back(event.idempotency_key);
    sequences[event.destination].push_back(event.sequence.value_or(0));
  }
  EXPECT_EQ(keys["ledger"], (std::vector<std::string>{"ledger:t1:1", "ledger:t2:1", "ledger:t4:1"}));
  EXPECT_EQ(keys["audit"], (std::vector<std::string>{"audit:t1:1", "audit:t3:1", "audit:t4:1"}));
  EXPECT_EQ(sequences["ledger"], (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(sequences["audit"], (std::vector<std::int64_t>{1, 2, 3}));
  // The view shows the same numbers for the delivered events.
  EXPECT_EQ(db.scalar("SELECT string_agg(destination || ' ' || sequence || ' ' || status, ', ' ORDER BY destination, "
                      "sequence) FROM outbox"),
            "audit 1 delivered, audit 2 delivered, audit 3 delivered, "
            "ledger 1 delivered, ledger 2 delivered, ledger 3 delivered");
}

TEST(ChangeLog, ARevivedDeadLetterIsDeliveredBesideItsKeysLaterEventsAndKeepsItsSequence) {
  TestDatabase db;
  auto connection = db.connect();
  append(*connection, {"ledger"}, {{"acct-1", "t1:1", R"({"n": 1})"}, {"acct-1", "t2:1", R"({"n": 2})"}});
  auto claimed = claim(*connection, {"ledger"});
  ASSERT_EQ(claimed.size(), 1u);
  const ClaimedEvent given_up = claimed[0];
  {
    pqxx::nontransaction txn(*connection);
    txn.exec_params(std::string(sql::kRelayMarkFailed), given_up.id, given_up.attempt, "dead", 0LL, "HTTP 410");
  }
  claimed = claim(*connection, {"ledger"});
  ASSERT_EQ(claimed.size(), 1u) << "a dead event held back its key";
  EXPECT_EQ(claimed[0].idempotency_key, "ledger:t2:1");
  EXPECT_EQ(claimed[0].sequence, 2);
  const ClaimedEvent in_flight = claimed[0];

  {
    pqxx::nontransaction txn(*connection);
    EXPECT_EQ(txn.exec_params(std::string(sql::kRelayRetryOne), given_up.id, "{dead}").size(), 1u);
  }
  claimed = claim(*connection, {"ledger"});
  ASSERT_EQ(claimed.size(), 1u) << "the revived letter waited for its key's event in flight";
  EXPECT_EQ(claimed[0].id, given_up.id);
  EXPECT_EQ(claimed[0].sequence, 1);
  EXPECT_EQ(claimed[0].attempt, 1);

  claim(*connection, {"ledger"}, {in_flight, claimed[0]});
  EXPECT_EQ(db.scalar("SELECT string_agg(sequence || ' ' || status, ', ' ORDER BY sequence) FROM outbox"),
            "1 delivered, 2 delivered");
}

TEST(ChangeLog, AReadThatMeetsACursorAClaimHoldsReadsTheSameChangesAgain) {
  TestDatabase db;
  auto connection = db.connect();
  append(*connection, {"ledger"}, {{"acct-1", "t1:1", R"({"n": 1})"}});
  const auto head = claim(*connection, {"ledger"});
  ASSERT_EQ(head.size(), 1u);

  // A relay holds the key's cursor, as one moving its delivered head does, with a snapshot
  // from before the key's next change ...
  auto holder = db.connect();
  pqxx::work holding(*holder);
  holding.exec("SELECT 1 FROM tidemark_cursor WHERE destination = 'ledger' AND partition_key = 'acct-1' FOR UPDATE");
  append(*connection, {"ledger"}, {{"acct-1", "t2:1", R"({"n": 2})"}});
  // ... while another relay reads the log: it meets the held cursor and leaves the change for
  // the next read.
  EXPECT_TRUE(claim(*connection, {"ledger"}).empty());
  // The holder moves the head past the delivered event and finds no next change (its
  // snapshot is older than it).
  holding.exec(
      "UPDATE tidemark_cursor SET through = head_sequence, last_sequence = last_sequence + 1, head_sequence = NULL, "
      "head_due_at = NULL, head_attempts = 0, head_leased = false "
      "WHERE destination = 'ledger' AND partition_key = 'acct-1'");
  holding.commit();

  const auto next = claim(*connection, {"ledger"});
  ASSERT_EQ(next.size(), 1u) << "the change read while its cursor was held was never read again";
  EXPECT_EQ(next[0].idempotency_key, "ledger:t2:1");
  EXPECT_EQ(next[0].sequence, 2);
}

// A destination's history read in one pass (views/history.sql: a rebuild's replay) numbers,
// keys and shapes every event as the `outbox` view does, whatever its state: delivered, given
// up on, in flight, behind its head.
TEST(ChangeLog, TheHistoryReadInOnePassIsTheOutboxOfItsDestination) {
  TestDatabase db;
  auto connection = db.connect();
  append(*connection, {"audit", "ledger"}, {{"acct-1", "t1:1", R"({"n": 1})"}, {"acct-2", "t2:1", R"({"n": 2})"}});
  append(*connection, {"ledger"}, {{"acct-1", "t3:1", R"({"n": 3})"}});
  append(*connection, {"audit", "ledger"}, {{"acct-1", "t4:1", R"({"n": 4})"}, {"acct-1", "t5:1", R"({"n": 5})"}});
  auto claimed = claim(*connection, {"audit", "ledger"});
  claimed = claim(*connection, {"audit", "ledger"}, claimed);  // the first ones delivered
  for (const auto& event : claimed) {
    if (event.destination != "ledger" || event.partition_key != "acct-1") continue;
    pqxx::nontransaction txn(*connection);
    txn.exec_params(std::string(sql::kRelayMarkFailed), event.id, event.attempt, "dead", 0LL, "HTTP 410");
  }
  claim(*connection, {"audit", "ledger"});  // in flight: the next of each key
  for (const char* destination : {"audit", "ledger"}) {
    SCOPED_TRACE(destination);
    const std::string where = std::string("'") + destination + "'";
    const std::string history = db.scalar(
        "SELECT string_agg(id || ' ' || idempotency_key || ' ' || coalesce(partition_key, '-') || ' ' || sequence || ' ' "
        "|| payload::text, ', ' ORDER BY id) FROM tidemark_destination_history(" + where + ")");
    EXPECT_FALSE(history.empty());
    EXPECT_EQ(history,
              db.scalar("SELECT string_agg(id || ' ' || idempotency_key || ' ' || coalesce(partition_key, '-') || ' ' || "
                        "sequence || ' ' || payload::text, ', ' ORDER BY id) FROM outbox WHERE destination = " + where));
  }
}

}  // namespace
}  // namespace tidemark::pipeline
