// The relay's claim through per-key heads (migrations/0015_destination_heads.sql):
// its cost does not depend on the backlog or the statistics, every head stays its key's
// lowest pending sequence whatever the relay, the operator and the writers do, and writers and
// the relay's marks lock the heads in one order, so they never deadlock.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "pipeline/store/migrate.hpp"
#include "pipeline/store/pg/pg_text.hpp"
#include "sql/statements.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::pipeline {
namespace {

using testing::TempDir;
using testing::TestDatabase;

constexpr long long kLeaseMs = 60'000;

struct Claimed {
  std::int64_t id = 0;
  int attempt = 0;
};

// The ids and the attempts of `events` as claim.sql's $4 and $5.
std::pair<std::string, std::string> delivered_arrays(const std::vector<Claimed>& events) {
  std::vector<std::int64_t> ids;
  std::vector<std::int64_t> attempts;
  for (const auto& event : events) {
    ids.push_back(event.id);
    attempts.push_back(event.attempt);
  }
  return {db::bigint_array_literal(ids), db::bigint_array_literal(attempts)};
}

// One call of relay/claim.sql: records `delivered`, claims up to `max_events` of "ledger".
std::vector<Claimed> claim(pqxx::connection& connection, std::size_t max_events,
                           const std::vector<Claimed>& delivered = {}) {
  pqxx::nontransaction txn(connection);
  const auto [ids, attempts] = delivered_arrays(delivered);
  const auto rows = txn.exec_params(std::string(sql::kRelayClaim), "{ledger}", "{" + std::to_string(max_events) + "}",
                                    static_cast<long long>(max_events), kLeaseMs, ids, attempts);
  std::vector<Claimed> claimed;
  for (const auto& row : rows) claimed.push_back({row[0].as<std::int64_t>(), row[6].as<int>()});
  return claimed;
}

void mark_failed(pqxx::connection& connection, const Claimed& event, const char* status) {
  pqxx::nontransaction txn(connection);
  txn.exec_params(std::string(sql::kRelayMarkFailed), event.id, event.attempt, status, 0LL, "HTTP 500");
}

// Keys whose head is not their lowest pending sequence with that event's attempts and due
// time, or that event leased (one attempt more on the head, due when the lease ends) ("" when
// every head is right).
std::string wrong_heads(const TestDatabase& db) {
  return db.scalar(
      "SELECT string_agg(h.partition_key || ' head ' || coalesce(h.head_sequence::text, 'none') || ' lowest ' || "
      "coalesce(p.sequence::text, 'none') || ' attempts ' || coalesce(h.head_attempts::text, 'none') || ' row ' || "
      "coalesce(p.attempts::text, 'none'), ', ') "
      "FROM tidemark_destination_sequence h "
      "LEFT JOIN LATERAL (SELECT o.sequence, o.attempts, o.next_attempt_at FROM outbox o WHERE o.destination = "
      "h.destination AND o.partition_key = h.partition_key AND o.status = 'pending' ORDER BY o.sequence LIMIT 1) p "
      "ON true "
      "WHERE h.head_sequence IS DISTINCT FROM p.sequence "
      "OR NOT ((coalesce(h.head_attempts, 0) IS NOT DISTINCT FROM p.attempts "
      "AND h.head_due_at IS NOT DISTINCT FROM p.next_attempt_at) "
      "OR (h.head_attempts = p.attempts + 1 AND h.head_due_at > now()))");
}

// Of the events `ids`, those with an earlier pending event of their key (per-key order broken).
std::string claimed_out_of_order(const TestDatabase& db, const std::vector<Claimed>& claimed) {
  std::vector<std::int64_t> ids;
  for (const auto& event : claimed) ids.push_back(event.id);
  return db.scalar("SELECT string_agg(o.id::text, ',') FROM outbox o WHERE o.id = ANY ('" +
                   db::bigint_array_literal(ids) +
                   "'::bigint[]) AND EXISTS (SELECT 1 FROM outbox e WHERE e.destination = o.destination "
                   "AND e.partition_key = o.partition_key AND e.status = 'pending' AND e.sequence < o.sequence)");
}

// `events` pending events of "ledger" over `accounts` keys, written the way the statements
// keep them (heads set in the same transaction), without ANALYZE.
void fill_backlog(const TestDatabase& db, int events, int accounts, const std::string& destination = "ledger") {
  auto connection = db.connect();
  pqxx::work txn(*connection);
  txn.exec("SELECT set_config('tidemark.outbox_heads', 'kept', true)");
  txn.exec_params(
      "INSERT INTO outbox (destination, idempotency_key, partition_key, sequence, payload) "
      "SELECT $3, $3 || ':tx-' || i, 'acct-' || (i % $2), i / $2 + 1, jsonb_build_object('n', i) "
      "FROM generate_series(0, $1 - 1) AS i",
      events, accounts, destination);
  txn.exec_params(
      "INSERT INTO tidemark_destination_sequence (destination, partition_key, last_sequence, head_sequence, "
      "head_due_at) SELECT $3, 'acct-' || a, ($1 - 1 - a) / $2 + 1, 1, now() "
      "FROM generate_series(0, $2 - 1) AS a",
      events, accounts, destination);
  txn.commit();
}

TEST(RelayClaimHead, ClaimReadsOnlyTheClaimedRowsOfAHundredThousandPendingWithoutStatistics) {
  TestDatabase db;
  db.scalar("ALTER TABLE outbox SET (autovacuum_enabled = false)");
  db.scalar("ALTER TABLE tidemark_destination_sequence SET (autovacuum_enabled = false)");
  fill_backlog(db, 100'000, 2'000);
  // Never analyzed: the planner has no statistics, which is what made the old claim scan and
  // sort every pending row.
  ASSERT_EQ(db.scalar("SELECT count(*) FROM pg_stat_user_tables WHERE relname IN ('outbox', "
                      "'tidemark_destination_sequence') AND last_analyze IS NULL AND last_autoanalyze IS NULL"),
            "2");
  auto connection = db.connect();
  std::vector<Claimed> delivered;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    // The table statistics of this transaction's own reads (pg_stat_xact_user_tables).
    pqxx::work txn(*connection);
    const auto [ids, attempts] = delivered_arrays(delivered);
    const auto rows = txn.exec_params(std::string(sql::kRelayClaim), "{ledger}", "{64}", 64LL, kLeaseMs, ids, attempts);
    ASSERT_EQ(rows.size(), 64u);
    const auto read = txn.exec(
        "SELECT relname, seq_scan, seq_tup_read, idx_tup_fetch FROM pg_stat_xact_user_tables "
        "WHERE relname IN ('outbox', 'tidemark_destination_sequence') ORDER BY relname");
    for (const auto& table : read) {
      SCOPED_TRACE(table[0].c_str());
      EXPECT_EQ(table[1].as<long long>(), 0) << "sequential scans";
      // A few index fetches per claimed or delivered event, never the 100,000 pending rows.
      EXPECT_LE(table[3].as<long long>(), 6 * 128) << "rows fetched through indexes";
    }
    txn.commit();
    delivered.clear();
    for (const auto& row : rows) delivered.push_back({row[0].as<std::int64_t>(), row[6].as<int>()});
  }
  EXPECT_EQ(wrong_heads(db), "");
}

// A claim locks the newest version of a head, which another claim may have moved, after this
// claim's snapshot, to a row a writer committed after that snapshot too: the claim cannot see
// the head's row. The head must keep its sequence (due a lease later), not become "nothing
// pending", or that row would never be claimed. The invisible row is modelled here as one not
// yet written when the claim runs; the writer then adds it without touching the head, as a
// writer does for a key that has one.
TEST(RelayClaimHead, AHeadWhoseRowTheClaimCannotSeeKeepsItsSequenceAndItsRowIsClaimedLater) {
  TestDatabase db;
  fill_backlog(db, 1, 1);  // acct-0: sequence 1, the head
  auto connection = db.connect();
  const auto first = claim(*connection, 64);
  ASSERT_EQ(first.size(), 1u);
  {
    // Another claim recorded sequence 1 as delivered and moved the head on to sequence 2,
    // which this claim's snapshot does not hold.
    pqxx::work txn(*connection);
    txn.exec("SELECT set_config('tidemark.outbox_heads', 'kept', true)");
    txn.exec("UPDATE outbox SET status = 'delivered' WHERE sequence = 1");
    txn.exec("UPDATE tidemark_destination_sequence SET last_sequence = 2, head_sequence = 2, head_due_at = now(), "
             "head_attempts = NULL");
    txn.commit();
  }
  EXPECT_TRUE(claim(*connection, 64).empty());
  EXPECT_EQ(db.scalar("SELECT head_sequence::text || ' ' || (head_due_at > now() + interval '30 seconds')::text "
                      "FROM tidemark_destination_sequence"),
            "2 true")
      << "the head lost its sequence, or is probed again on every claim";
  {
    pqxx::work txn(*connection);
    txn.exec("SELECT set_config('tidemark.outbox_heads', 'kept', true)");
    txn.exec("INSERT INTO outbox (destination, idempotency_key, partition_key, sequence, payload) "
             "VALUES ('ledger', 'ledger:tx-late', 'acct-0', 2, '{}')");
    txn.exec("UPDATE tidemark_destination_sequence SET head_due_at = now()");  // the lease ran out
    txn.commit();
  }
  const auto later = claim(*connection, 64);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(db.scalar("SELECT sequence FROM outbox WHERE id = " + std::to_string(later[0].id)), "2");
}

// The claim's estimated cost grows with the tables (it assumes a claim could take every head),
// and past jit_above_cost PostgreSQL compiled it with JIT on every call: 17 ms for a claim of
// 2 ms at 100,000 keys (migration 0022). Here JIT is made to compile everything it may
// (jit_above_cost = 0); auto_explain reports each nested statement's plan, with a "JIT:" part
// when it was compiled. A query of the same session is, which shows the check can see it;
// none of the claim's statements is.
TEST(RelayClaimHead, TheClaimIsNeverCompiledByJitWhateverItsEstimatedCost) {
  TestDatabase db;
  fill_backlog(db, 200, 20);
  auto connection = db.connect();
  struct Plans : pqxx::errorhandler {
    using pqxx::errorhandler::errorhandler;
    bool operator()(const char message[]) noexcept override {
      messages.emplace_back(message);
      return false;
    }
    // The plans reported with a "JIT:" part, but the call's own (the caller's session
    // compiles that one, not the function).
    std::string compiled() const {
      std::string text;
      for (const auto& message : messages) {
        if (message.find("JIT:") != std::string::npos && message.find("FROM tidemark_relay_claim(") == std::string::npos) {
          text += message;
        }
      }
      return text;
    }
    std::vector<std::string> messages;
  } plans(*connection);
  {
    pqxx::nontransaction txn(*connection);
    for (const char* setting :
         {"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0", "SET auto_explain.log_analyze = on",
          "SET auto_explain.log_nested_statements = on", "SET auto_explain.log_level = notice",
          "SET client_min_messages = notice", "SET jit = on", "SET jit_above_cost = 0",
          "SET jit_inline_above_cost = -1", "SET jit_optimize_above_cost = -1"}) {
      txn.exec(setting);
    }
    txn.exec("SELECT count(*) FROM outbox WHERE payload ->> 'n' <> 'none'");
  }
  if (plans.compiled().empty()) {
    GTEST_SKIP() << "this PostgreSQL compiles nothing with JIT (no llvmjit), so the claim cannot be either";
  }
  plans.messages.clear();
  EXPECT_EQ(claim(*connection, 64).size(), 20u);
  const bool reported = std::any_of(plans.messages.begin(), plans.messages.end(), [](const std::string& message) {
    return message.find("UPDATE tidemark_destination_sequence") != std::string::npos;
  });
  EXPECT_TRUE(reported) << "auto_explain reported none of the claim's statements";
  EXPECT_EQ(plans.compiled(), "") << "statements of the claim were compiled";
}

// A window per destination (migration 0023): each destination is claimed up to its own limit,
// its heads first and then its rows without a key, and a destination with room left takes
// no more because another one had less due; the limit across them holds too.
TEST(RelayClaimHead, EachDestinationIsClaimedUpToItsOwnLimit) {
  TestDatabase db;
  fill_backlog(db, 40, 20, "ledger");
  fill_backlog(db, 40, 20, "audit");
  fill_backlog(db, 3, 3, "crm");
  auto connection = db.connect();
  const auto claimed_by_destination = [&](const char* destinations, const char* limits, long long max_events) {
    pqxx::nontransaction txn(*connection);
    std::map<std::string, int> counts;
    for (const auto& row :
         txn.exec_params(std::string(sql::kRelayClaim), destinations, limits, max_events, kLeaseMs, "{}", "{}")) {
      ++counts[row[1].as<std::string>()];
    }
    return counts;
  };
  EXPECT_EQ(claimed_by_destination("{ledger,audit,crm}", "{3,12,10}", 25),
            (std::map<std::string, int>{{"ledger", 3}, {"audit", 12}, {"crm", 3}}));
  // audit's 20 heads: 12 are leased, 8 left, then 5 rows without a key (no head, no order).
  {
    pqxx::work txn(*connection);
    txn.exec("INSERT INTO outbox (destination, idempotency_key, payload, next_attempt_at) "
             "SELECT 'audit', 'audit:legacy-' || i, '{}', now() - interval '1 second' FROM generate_series(1, 5) AS i");
    txn.commit();
  }
  EXPECT_EQ(claimed_by_destination("{audit}", "{10}", 10), (std::map<std::string, int>{{"audit", 10}}));
  EXPECT_EQ(claimed_by_destination("{audit,ledger}", "{10,1}", 11),
            (std::map<std::string, int>{{"audit", 3}, {"ledger", 1}}));
  // The limit across them still holds: 4 of ledger's 16 due heads.
  EXPECT_EQ(claimed_by_destination("{ledger}", "{10}", 4), (std::map<std::string, int>{{"ledger", 4}}));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM tidemark_destination_sequence WHERE head_attempts = 1"), "31");
}

// Migration 0028: the relay renews the lease of an attempt in flight only while
// that attempt still holds it: not once its failure is recorded (the retry's due time
// stands), not once another claim counted a later attempt on the head. A row without a key
// keeps its lease on the row and is renewed there.
TEST(RelayClaimHead, ARenewalExtendsOnlyTheLeasesItsAttemptsStillHold) {
  TestDatabase db;
  fill_backlog(db, 3, 3);
  auto connection = db.connect();
  {
    pqxx::work txn(*connection);
    txn.exec("INSERT INTO outbox (destination, idempotency_key, payload) VALUES ('ledger', 'ledger:legacy', '{}')");
    txn.commit();
  }
  auto claimed = claim(*connection, 10);
  ASSERT_EQ(claimed.size(), 4u);
  std::sort(claimed.begin(), claimed.end(), [](const Claimed& a, const Claimed& b) { return a.id < b.id; });
  const Claimed held = claimed[0];      // acct-0: still in flight
  const Claimed failed = claimed[1];    // acct-1: its failure is recorded (a retry due at once)
  const Claimed overtaken = claimed[2]; // acct-2: its lease ran out and another claim took it
  const Claimed legacy = claimed[3];    // no key: the lease is on the row
  mark_failed(*connection, failed, "pending");
  db.scalar("UPDATE tidemark_destination_sequence SET head_attempts = 2 WHERE partition_key = 'acct-2' RETURNING 1");
  // Every lease ends within a second, so that a renewal shows.
  db.scalar("UPDATE tidemark_destination_sequence SET head_due_at = least(head_due_at, now() + interval '1 second') "
            "RETURNING 1");
  db.scalar("UPDATE outbox SET next_attempt_at = now() + interval '1 second' WHERE partition_key IS NULL RETURNING 1");

  const auto renew = [&](const std::vector<Claimed>& events) {
    const auto [ids, attempts] = delivered_arrays(events);
    pqxx::nontransaction txn(*connection);
    std::vector<std::int64_t> renewed;
    for (const auto& row : txn.exec_params(std::string(sql::kRelayRenew), ids, attempts, kLeaseMs)) {
      renewed.push_back(row[0].as<std::int64_t>());
    }
    std::sort(renewed.begin(), renewed.end());
    return renewed;
  };
  EXPECT_EQ(renew({held, failed, overtaken, legacy}), (std::vector<std::int64_t>{held.id, legacy.id}));
  EXPECT_EQ(renew({{legacy.id, legacy.attempt + 1}}), std::vector<std::int64_t>{}) << "another attempt's lease";

  const auto due_in_seconds = [&](const std::string& key) {
    return std::stod(db.scalar("SELECT extract(epoch FROM head_due_at - now()) FROM tidemark_destination_sequence "
                               "WHERE partition_key = '" + key + "'"));
  };
  EXPECT_GT(due_in_seconds("acct-0"), 50);
  EXPECT_LT(due_in_seconds("acct-1"), 2) << "the recorded retry's due time stands";
  EXPECT_LT(due_in_seconds("acct-2"), 2) << "the other claim's lease is not this attempt's to renew";
  EXPECT_GT(std::stod(db.scalar("SELECT extract(epoch FROM next_attempt_at - now()) FROM outbox "
                                "WHERE partition_key IS NULL")),
            50);
}

// Migration 0024: a call that records a delivered head and claims its successor writes the
// head once (moved and leased), not twice (moved, then leased): each head write is a non-HOT
// row version with an entry in each of the table's indexes. 20 keys of 5 events, fewer than a
// call may claim, drained by calls that deliver what the previous one claimed: one lease per
// event and a last move per key (the two statements of before wrote 100 more).
TEST(RelayClaimHead, EachHeadIsWrittenOnceForEachEventAndOnceWhenItsKeyIsDrained) {
  TestDatabase db;
  fill_backlog(db, 100, 20);
  auto connection = db.connect();
  long long head_writes = 0;
  long long events = 0;
  std::vector<Claimed> delivered;
  for (int call = 0; call < 50; ++call) {
    // The row versions the claim writes: pg_stat_xact_user_tables also holds what earlier
    // transactions of the session wrote until the statistics are flushed, so the difference
    // within one transaction.
    pqxx::work txn(*connection);
    const auto updated = [&] {
      return txn.exec("SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = 'tidemark_destination_sequence'")
          [0][0]
              .as<long long>();
    };
    const auto before = updated();
    const auto [ids, attempts] = delivered_arrays(delivered);
    const auto rows = txn.exec_params(std::string(sql::kRelayClaim), "{ledger}", "{64}", 64LL, kLeaseMs, ids, attempts);
    head_writes += updated() - before;
    txn.commit();
    events += static_cast<long long>(rows.size());
    delivered.clear();
    for (const auto& row : rows) delivered.push_back({row[0].as<std::int64_t>(), row[6].as<int>()});
    if (rows.empty()) break;
  }
  EXPECT_EQ(events, 100);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM outbox WHERE status = 'delivered'"), "100");
  EXPECT_EQ(head_writes, 100 + 20);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM tidemark_destination_sequence WHERE head_sequence IS NOT NULL"), "0");
}

// The successor of a delivered head is claimed in the same call, but in due order with the
// other keys' heads: an older head of another key goes first, and the successor then waits
// on its key's head with its own due time and attempts, as if it had not been looked at.
TEST(RelayClaimHead, ADeliveredHeadsSuccessorWaitsItsTurnBehindOlderHeadsOfOtherKeys) {
  TestDatabase db;
  fill_backlog(db, 3, 2);  // acct-0: sequences 1 and 2; acct-1: sequence 1
  // By hand (the trigger keeps the heads): acct-0's first event is the oldest, then acct-1's,
  // then acct-0's second.
  db.scalar("UPDATE outbox SET next_attempt_at = now() - CASE idempotency_key WHEN 'ledger:tx-0' THEN "
            "interval '3 hours' WHEN 'ledger:tx-1' THEN interval '2 hours' ELSE interval '1 hour' END RETURNING 1");
  const auto key_of = [&](const Claimed& event) {
    return db.scalar("SELECT partition_key || '/' || sequence FROM outbox WHERE id = " + std::to_string(event.id));
  };
  auto connection = db.connect();
  const auto first = claim(*connection, 1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(key_of(first[0]), "acct-0/1");
  const auto second = claim(*connection, 1, first);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(key_of(second[0]), "acct-1/1");
  EXPECT_EQ(wrong_heads(db), "");  // acct-0's head is on sequence 2, due an hour ago, not leased
  const auto third = claim(*connection, 1, second);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(key_of(third[0]), "acct-0/2");
  EXPECT_EQ(third[0].attempt, 1);
  EXPECT_TRUE(claim(*connection, 1, third).empty());
  EXPECT_EQ(db.scalar("SELECT count(*) FROM outbox WHERE status = 'delivered'"), "3");
  EXPECT_EQ(wrong_heads(db), "");
}

// Status and view lag count a destination's pending and dead events (migration 0017): the
// pending through outbox_partition, the dead through outbox_dead, so that a new row enters one
// secondary index. Over 100,000 delivered events never analyzed, each count reads only the
// undelivered rows, never the delivered ones.
TEST(RelayClaimHead, CountsOfUndeliveredEventsReadNoDeliveredRowWithoutStatistics) {
  TestDatabase db;
  // Beside the keys, the one index a new (pending, ordered) row enters, and two it does not.
  EXPECT_EQ(db.scalar("SELECT string_agg(indexname, ' ' ORDER BY indexname) FROM pg_indexes WHERE tablename = 'outbox'"),
            "outbox_dead outbox_idempotency_key_key outbox_partition outbox_pkey outbox_unordered_due");
  db.scalar("ALTER TABLE outbox SET (autovacuum_enabled = false)");
  fill_backlog(db, 100'010, 10);
  {
    // The heads do not matter here: the head trigger is told they are kept.
    auto writer = db.connect();
    pqxx::work txn(*writer);
    txn.exec("SELECT set_config('tidemark.outbox_heads', 'kept', true)");
    txn.exec("UPDATE outbox SET status = 'delivered' WHERE sequence > 1");
    txn.exec("UPDATE outbox SET status = 'dead' WHERE sequence = 1 AND partition_key < 'acct-3'");
    txn.commit();
  }
  // A connection of its own: PostgreSQL 15 reports a session's table statistics lazily, so
  // the writer's scans could still show in its pg_stat_xact_user_tables.
  auto connection = db.connect();
  const auto reads = [&](const std::string& statement, const auto&... parameters) {
    pqxx::work txn(*connection);
    const auto result = txn.exec_params(statement, parameters...);
    const auto read = txn.exec1(
        "SELECT seq_scan, idx_tup_fetch FROM pg_stat_xact_user_tables WHERE relname = 'outbox'");
    std::string plan;
    for (const auto& line : txn.exec_params("EXPLAIN " + statement, parameters...)) plan += std::string(line[0].c_str()) + "\n";
    EXPECT_EQ(read[0].as<long long>(), 0) << "sequential scans of the outbox:\n" << plan;
    EXPECT_LE(read[1].as<long long>(), 20) << "rows fetched:\n" << statement;
    std::string text;
    for (const auto& row : result) {
      for (const auto& field : row) text += std::string(field.is_null() ? "NULL" : field.c_str()) + " ";
      text += "| ";
    }
    return text;
  };
  EXPECT_EQ(reads(std::string(sql::kStatusDestinationEvents), "p"), "");  // no event names pipeline p
  const std::string lag = reads(std::string(sql::kViewsLag), "{ledger}");
  EXPECT_TRUE(lag.starts_with("ledger ") && lag.ends_with(" 3 | ")) << lag;  // 3 dead events
  db.scalar("INSERT INTO views (name, version, status, position) VALUES ('daily_totals', 1, 'live', '') RETURNING 1");
  reads(std::string(sql::kViewsList));
}

// A relay's life at random (fixed seed): claims, deliveries, retries, dead events, re-drives by
// the operator and rows edited by hand. After every step each head is its key's lowest pending
// sequence, and nothing claimed has an earlier pending event of its key.
TEST(RelayClaimHead, HeadsStayTheLowestPendingSequenceThroughEveryMark) {
  const std::uint32_t seed = 1512;
  std::cout << "seed " << seed << '\n';
  std::mt19937 random(seed);
  TestDatabase db;
  fill_backlog(db, 600, 12);
  auto connection = db.connect();
  std::vector<Claimed> in_flight;
  std::vector<Claimed> delivered;
  for (int step = 0; step < 200; ++step) {
    SCOPED_TRACE("step " + std::to_string(step) + ", seed " + std::to_string(seed));
    for (const auto& event : in_flight) {
      switch (random() % 6) {
        case 0: mark_failed(*connection, event, "pending"); break;  // due again at once
        case 1: mark_failed(*connection, event, "dead"); break;
        default: delivered.push_back(event);
      }
    }
    if (random() % 8 == 0) {
      pqxx::nontransaction txn(*connection);
      txn.exec_params(std::string(sql::kRelayRetryOne),
                      txn.exec("SELECT coalesce(min(id), 0) FROM outbox WHERE status = 'dead'")[0][0].as<long long>(),
                      "{pending,dead}");
    }
    if (random() % 25 == 0) {
      pqxx::nontransaction txn(*connection);
      txn.exec(std::string(sql::kRelayRetryAllDead));
    }
    if (random() % 20 == 0) {
      // By hand: an operator makes some waiting events due later (the trigger keeps the heads).
      db.scalar("UPDATE outbox SET next_attempt_at = now() + interval '1 hour' WHERE status = 'pending' AND id % 7 = " +
                std::to_string(random() % 7) + " RETURNING 1");
    }
    in_flight = claim(*connection, 1 + random() % 16, delivered);
    delivered.clear();
    ASSERT_EQ(wrong_heads(db), "");
    ASSERT_EQ(claimed_out_of_order(db, in_flight), "");
  }
  // Everything left goes: the hour-later ones too, once due.
  db.scalar("UPDATE outbox SET next_attempt_at = now() WHERE status = 'pending' RETURNING 1");
  EXPECT_EQ(wrong_heads(db), "");
  for (int round = 0; round < 400; ++round) {
    in_flight = claim(*connection, 64, in_flight);
    ASSERT_EQ(claimed_out_of_order(db, in_flight), "");
    if (in_flight.empty()) break;
  }
  EXPECT_EQ(db.scalar("SELECT count(*) FROM outbox WHERE status = 'pending'"), "0");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM tidemark_destination_sequence WHERE head_sequence IS NOT NULL"), "0");
}

// A head whose successor is committed by a writer while the relay delivers the head: the
// relay's mark waits for the writer's lock and then sees the new rows, so the key is not left
// without a head (the event would never be sent).
TEST(RelayClaimHead, DeliveryOfTheLastPendingEventWhileAWriterAddsOneLeavesTheNewOneClaimable) {
  TestDatabase db;
  fill_backlog(db, 1, 1);
  auto relay = db.connect();
  const auto first = claim(*relay, 10);
  ASSERT_EQ(first.size(), 1u);
  // The writer holds the key's counter row, as apply_batch.sql does until its commit.
  auto writer = db.connect();
  pqxx::work write(*writer);
  write.exec(
      "UPDATE tidemark_destination_sequence SET last_sequence = last_sequence + 1, "
      "head_sequence = coalesce(head_sequence, last_sequence + 1) WHERE partition_key = 'acct-0'");
  write.exec("SELECT set_config('tidemark.outbox_heads', 'kept', true)");
  write.exec(
      "INSERT INTO outbox (destination, idempotency_key, partition_key, sequence, payload) "
      "VALUES ('ledger', 'ledger:tx-late', 'acct-0', 2, '{}')");
  std::atomic<bool> marked{false};
  std::thread mark([&] {
    claim(*relay, 0, {first[0]});
    marked = true;
  });
  // The mark waits for the writer's lock (it would otherwise set the head to none).
  const auto waiting_since = std::chrono::steady_clock::now();
  while (db.scalar("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = '" +
                   db.name() + "'") != "1") {
    ASSERT_LT(std::chrono::steady_clock::now() - waiting_since, std::chrono::seconds(20)) << "the mark never waited";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(marked);
  write.commit();
  mark.join();
  EXPECT_EQ(wrong_heads(db), "");
  const auto next = claim(*relay, 10);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(db.scalar("SELECT idempotency_key FROM outbox WHERE id = " + std::to_string(next[0].id)),
            "ledger:tx-late");
}

// Two pipelines write batches over the same accounts, one in ascending, the other in
// descending account order, while a relay claims and marks: counter rows are locked in one
// order by all of them, so PostgreSQL reports no deadlock (they would be retried unseen, so
// the database's own count is what is asserted).
TEST(RelayClaimHead, TwoWritersAndARelayMarkingOnOverlappingKeysNeverDeadlock) {
  constexpr int kRows = 2'000;
  constexpr int kAccounts = 40;
  std::ostringstream up;
  std::ostringstream down;
  up << "transaction_id,source_revision,amount,account_id\n";
  down << "transaction_id,source_revision,amount,account_id\n";
  for (int i = 0; i < kRows; ++i) {
    up << "up-" << i << ",1,1.00,acct-" << i % kAccounts << '\n';
    down << "down-" << i << ",1,1.00,acct-" << kAccounts - 1 - i % kAccounts << '\n';
  }
  TestDatabase db;
  TempDir dir;
  auto request_up = testing::file_request(db, "up", dir.write("up.csv", up.str()), 50);
  auto request_down = testing::file_request(db, "down", dir.write("down.csv", down.str()), 50);
  std::atomic<bool> writing{true};
  const auto relay_loop = [&] {
    auto connection = db.connect();
    std::mt19937 random(7);
    std::vector<Claimed> in_flight;
    for (bool last = false; !last;) {
      last = !writing;
      for (;;) {
        std::vector<Claimed> delivered;
        for (const auto& event : in_flight) {
          if (random() % 5 == 0) {
            mark_failed(*connection, event, random() % 2 == 0 ? "pending" : "dead");
          } else {
            delivered.push_back(event);
          }
        }
        in_flight = claim(*connection, 32, delivered);
        if (in_flight.empty()) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the relay's idle poll
    }
  };
  std::string relay_error;  // a deadlock the relay's statement lost, say
  std::thread relay([&] {
    try {
      relay_loop();
    } catch (const std::exception& error) {
      relay_error = error.what();
    }
  });
  RunSummary summary_up;
  RunSummary summary_down;
  std::thread run_up([&] { summary_up = run_pipeline(request_up); });
  std::thread run_down([&] { summary_down = run_pipeline(request_down); });
  run_up.join();
  run_down.join();
  writing = false;
  relay.join();
  EXPECT_EQ(relay_error, "");
  testing::wait_for_no_tidemark_backends(db.url());
  EXPECT_EQ(testing::counts_text(summary_up.counts), "inserted " + std::to_string(kRows));
  EXPECT_EQ(testing::counts_text(summary_down.counts), "inserted " + std::to_string(kRows));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM outbox WHERE status = 'pending'"), "0");
  EXPECT_EQ(wrong_heads(db), "");
  // Sessions report their counters when they end; the relay's and the writers' have.
  auto connection = db.connect();
  pqxx::nontransaction txn(*connection);
  EXPECT_EQ(txn.exec("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")[0][0].as<long long>(),
            0);
}

// A database at 0014 with a backlog upgrades: 0015 gives each key its lowest pending sequence
// as head (delivered and dead events do not count), makes a counter for a key that had rows
// but none, and rows without a key or sequence stay claimable. In a schema of its own, as in
// migrate_test.cpp.
TEST(RelayClaimHead, MigrationGivesTheKeysOfAnExistingBacklogTheirHeads) {
  TestDatabase db;
  auto connection = db.connect();
  {
    pqxx::nontransaction txn(*connection);
    txn.exec("CREATE SCHEMA at0014");
    txn.exec("SET search_path TO at0014");  // for the session: migrate and the claims below too
    txn.exec(std::string(sql::kMigrateCreateSchemaMigrations));
  }
  for (const auto& migration : sql::kMigrations) {
    if (std::string_view(migration.version) > "0014_quarantine_release_position.sql") break;
    pqxx::work txn(*connection);
    txn.exec(std::string(migration.text));
    txn.exec_params(std::string(sql::kMigrateRecordApplied), std::string(migration.version));
    txn.commit();
  }
  {
    pqxx::work txn(*connection);
    txn.exec(R"(INSERT INTO outbox (destination, idempotency_key, partition_key, sequence, payload, status,
                                    next_attempt_at) VALUES
                  ('ledger', 'a1', 'A', 1, '{}', 'delivered', now()),
                  ('ledger', 'a2', 'A', 2, '{}', 'dead', now()),
                  ('ledger', 'a3', 'A', 3, '{}', 'pending', '2026-01-01T00:00:03Z'),
                  ('ledger', 'a4', 'A', 4, '{}', 'pending', '2026-01-01T00:00:04Z'),
                  ('ledger', 'b1', 'B', 1, '{}', 'delivered', now()),
                  ('ledger', 'c7', 'C', 7, '{}', 'pending', '2026-01-01T00:00:07Z'),
                  ('ledger', 'legacy', NULL, NULL, '{}', 'pending', '2026-01-01T00:00:00Z'))");
    txn.exec("INSERT INTO tidemark_destination_sequence VALUES ('ledger', 'A', 4), ('ledger', 'B', 1)");
    txn.commit();
  }
  db::migrate(*connection);

  pqxx::nontransaction txn(*connection);
  const auto heads = txn.exec(
      "SELECT partition_key || ' ' || last_sequence || ' ' || coalesce(head_sequence::text, 'none') || ' ' || "
      "coalesce(to_char(head_due_at AT TIME ZONE 'UTC', 'SS'), 'none') FROM tidemark_destination_sequence "
      "ORDER BY partition_key");
  std::vector<std::string> texts;
  for (const auto& row : heads) texts.push_back(row[0].c_str());
  EXPECT_EQ(texts, (std::vector<std::string>{"A 4 3 03", "B 1 none none", "C 7 7 07"}));
  std::vector<std::string> claimed;
  for (const auto& row : txn.exec_params(std::string(sql::kRelayClaim), "{ledger}", "{10}", 10LL, kLeaseMs, "{}", "{}")) {
    claimed.push_back(row[2].c_str());
  }
  std::sort(claimed.begin(), claimed.end());
  EXPECT_EQ(claimed, (std::vector<std::string>{"a3", "c7", "legacy"}));
}

}  // namespace
}  // namespace tidemark::pipeline
