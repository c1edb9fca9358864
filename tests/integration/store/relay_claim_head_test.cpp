// The relay's claim through each destination's cursor per partition key on the change log
// (migrations/0029_change_log.sql; the heads began with 0015_destination_heads.sql): its cost
// does not depend on the backlog or the statistics, every head stays its key's next
// undelivered change whatever the relay, the operator and the writers do, and writers and the
// relay's marks never deadlock.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
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
#include "tests/support/change_log.hpp"
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

// Cursors whose head is not their key's next change for the destination after `through`, or
// that are leased without an attempt counted and a lease running ("" when every head is
// right). Every committed change must have been read by the destination (a claim reads the
// log first): a change not read yet has no head.
std::string wrong_heads(const TestDatabase& db) {
  return db.scalar(
      "SELECT string_agg(k.destination || '/' || k.partition_key || ' head ' || coalesce(k.head_sequence::text, "
      "'none') || ' next ' || coalesce(n.key_sequence::text, 'none') || ' attempts ' || k.head_attempts || "
      "' leased ' || k.head_leased, ', ') "
      "FROM tidemark_cursor k "
      "LEFT JOIN LATERAL (SELECT c.key_sequence FROM tidemark_change c WHERE c.partition_key = k.partition_key "
      "AND c.key_sequence > k.through AND k.destination = ANY (c.destinations) ORDER BY c.key_sequence LIMIT 1) n "
      "ON true "
      "WHERE k.head_sequence IS DISTINCT FROM n.key_sequence "
      "OR (k.head_leased AND NOT (k.head_attempts >= 1 AND k.head_due_at > now()))");
}

// Of the events `claimed`, those with an earlier undelivered change of their key for their
// destination (per-key order broken). A revived dead letter is behind its cursor and holds
// nothing back, so it is neither checked nor counted.
std::string claimed_out_of_order(const TestDatabase& db, const std::vector<Claimed>& claimed) {
  std::vector<std::int64_t> ids;
  for (const auto& event : claimed) ids.push_back(event.id);
  return db.scalar(
      "SELECT string_agg(e.id::text, ',') "
      "FROM unnest('" + db::bigint_array_literal(ids) + "'::bigint[]) AS e(id) "
      "JOIN tidemark_destination t ON t.number = e.id % 1024 "
      "JOIN tidemark_change c ON c.position = e.id / 1024 "
      "JOIN tidemark_cursor k ON k.destination = t.name AND k.partition_key = c.partition_key "
      "WHERE NOT EXISTS (SELECT 1 FROM tidemark_dead_letter l WHERE l.destination = t.name AND l.position = c.position) "
      "AND EXISTS (SELECT 1 FROM tidemark_change b WHERE b.partition_key = c.partition_key "
      "AND t.name = ANY (b.destinations) AND b.key_sequence > k.through AND b.key_sequence < c.key_sequence)");
}

// `events` pending events of `destinations` over `accounts` keys (event keys '<prefix><i>:1'),
// written as a batch writes them, without ANALYZE.
void fill_backlog(const TestDatabase& db, int events, int accounts,
                  const std::vector<std::string>& destinations = {"ledger"}, const std::string& prefix = "tx-") {
  auto connection = db.connect();
  pqxx::work txn(*connection);
  testing::append_backlog(txn, destinations, events, accounts, prefix);
  txn.commit();
}

// Every destination's read of the log (the first step of a claim), committed on its own.
void ingest(const TestDatabase& db, const std::vector<std::string>& destinations = {"ledger"}) {
  auto connection = db.connect();
  pqxx::work txn(*connection);
  testing::ingest(txn, destinations);
  txn.commit();
}

// By hand, as another relay or the clock would have: sets `set` on the cursors matching `where`.
void update_cursors(const TestDatabase& db, const std::string& set, const std::string& where = "true") {
  db.scalar("UPDATE tidemark_cursor k SET " + set + " WHERE " + where);
}

// The log is read once by the destination (its ingest reads what was committed since, as
// each claim does first); then the claims read only what they claim and deliver.
TEST(RelayClaimHead, ClaimReadsOnlyTheClaimedRowsOfAHundredThousandPendingWithoutStatistics) {
  TestDatabase db;
  db.scalar("ALTER TABLE tidemark_change SET (autovacuum_enabled = false)");
  db.scalar("ALTER TABLE tidemark_cursor SET (autovacuum_enabled = false)");
  fill_backlog(db, 100'000, 2'000);
  ingest(db);
  // Never analyzed: the planner has no statistics, which is what made the old claim scan and
  // sort every pending row.
  ASSERT_EQ(db.scalar("SELECT count(*) FROM pg_stat_user_tables WHERE relname IN ('tidemark_change', "
                      "'tidemark_cursor') AND last_analyze IS NULL AND last_autoanalyze IS NULL"),
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
        "WHERE relname IN ('tidemark_change', 'tidemark_cursor') ORDER BY relname");
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

// A claim locks the newest version of a cursor, which another claim may have moved, after this
// claim's snapshot, to a change a writer committed after that snapshot too: the claim cannot
// see the head's change. The head must keep its sequence (due a lease later), not become
// "nothing pending", or that change would never be claimed. The invisible change is modelled
// here as one not yet written when the claim runs; the writer then adds it, and the
// destination's read of the log leaves a key that has a head alone.
TEST(RelayClaimHead, AHeadWhoseRowTheClaimCannotSeeKeepsItsSequenceAndItsRowIsClaimedLater) {
  TestDatabase db;
  fill_backlog(db, 1, 1);  // acct-0: sequence 1, the head
  auto connection = db.connect();
  const auto first = claim(*connection, 64);
  ASSERT_EQ(first.size(), 1u);
  // Another claim recorded sequence 1 as delivered and moved the head on to key_sequence 2,
  // which this claim's snapshot does not hold.
  update_cursors(db, "through = 1, last_sequence = 1, head_sequence = 2, head_due_at = now(), head_attempts = 0, "
                     "head_leased = false");
  EXPECT_TRUE(claim(*connection, 64).empty());
  EXPECT_EQ(db.scalar("SELECT head_sequence::text || ' ' || (head_due_at > now() + interval '30 seconds')::text "
                      "FROM tidemark_cursor"),
            "2 true")
      << "the head lost its sequence, or is probed again on every claim";
  {
    pqxx::work txn(*connection);
    testing::append_change(txn, {"ledger"}, "acct-0", "tx-late:1", "{}");
    txn.commit();
  }
  update_cursors(db, "head_due_at = now()");  // the lease ran out
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
    txn.exec("SELECT count(*) FROM tidemark_change WHERE payload ->> 'n' <> 'none'");
  }
  if (plans.compiled().empty()) {
    GTEST_SKIP() << "this PostgreSQL compiles nothing with JIT (no llvmjit), so the claim cannot be either";
  }
  plans.messages.clear();
  EXPECT_EQ(claim(*connection, 64).size(), 20u);
  const bool reported = std::any_of(plans.messages.begin(), plans.messages.end(), [](const std::string& message) {
    return message.find("UPDATE tidemark_cursor") != std::string::npos;
  });
  EXPECT_TRUE(reported) << "auto_explain reported none of the claim's statements";
  EXPECT_EQ(plans.compiled(), "") << "statements of the claim were compiled";
}

// A window per destination (migration 0023): each destination is claimed up to its own limit,
// its heads in due order, and a destination with room left takes no more because another one
// had less due; the limit across them holds too.
TEST(RelayClaimHead, EachDestinationIsClaimedUpToItsOwnLimit) {
  TestDatabase db;
  fill_backlog(db, 40, 20, {"ledger", "audit"});
  fill_backlog(db, 3, 3, {"crm"}, "crm-");
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
  // audit's 20 heads: 12 are leased, 8 left, then the heads of 5 keys of its own, due later.
  {
    pqxx::work txn(*connection);
    std::vector<testing::Change> changes;
    for (int i = 1; i <= 5; ++i) changes.push_back({"audit-" + std::to_string(i), "audit-" + std::to_string(i), "{}"});
    testing::append_changes(txn, {"audit"}, changes);
    txn.commit();
  }
  EXPECT_EQ(claimed_by_destination("{audit}", "{10}", 10), (std::map<std::string, int>{{"audit", 10}}));
  EXPECT_EQ(claimed_by_destination("{audit,ledger}", "{10,1}", 11),
            (std::map<std::string, int>{{"audit", 3}, {"ledger", 1}}));
  // The limit across them still holds: 4 of ledger's 16 due heads.
  EXPECT_EQ(claimed_by_destination("{ledger}", "{10}", 4), (std::map<std::string, int>{{"ledger", 4}}));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM tidemark_cursor WHERE head_leased AND head_attempts = 1"), "36");
}

// Migration 0028: the relay renews the lease of an attempt in flight only while
// that attempt still holds it: not once its failure is recorded (the retry's due time
// stands), not once another claim counted a later attempt on the head.
TEST(RelayClaimHead, ARenewalExtendsOnlyTheLeasesItsAttemptsStillHold) {
  TestDatabase db;
  fill_backlog(db, 3, 3);
  auto connection = db.connect();
  auto claimed = claim(*connection, 10);
  ASSERT_EQ(claimed.size(), 3u);
  std::sort(claimed.begin(), claimed.end(), [](const Claimed& a, const Claimed& b) { return a.id < b.id; });
  const Claimed held = claimed[0];      // acct-0: still in flight
  const Claimed failed = claimed[1];    // acct-1: its failure is recorded (a retry due at once)
  const Claimed overtaken = claimed[2]; // acct-2: its lease ran out and another claim took it
  mark_failed(*connection, failed, "pending");
  update_cursors(db, "head_attempts = 2", "partition_key = 'acct-2'");
  // Every lease ends within a second, so that a renewal shows.
  update_cursors(db, "head_due_at = least(head_due_at, now() + interval '1 second')");

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
  EXPECT_EQ(renew({{held.id, held.attempt + 1}}), std::vector<std::int64_t>{}) << "another attempt's lease";
  EXPECT_EQ(renew({held, failed, overtaken}), std::vector<std::int64_t>{held.id});

  const auto due_in_seconds = [&](const std::string& key) {
    return std::stod(db.scalar("SELECT extract(epoch FROM head_due_at - now()) FROM tidemark_cursor "
                               "WHERE partition_key = '" + key + "'"));
  };
  EXPECT_GT(due_in_seconds("acct-0"), 50);
  EXPECT_LT(due_in_seconds("acct-1"), 2) << "the recorded retry's due time stands";
  EXPECT_LT(due_in_seconds("acct-2"), 2) << "the other claim's lease is not this attempt's to renew";
}

// Migration 0024, kept by 0029: a call that records a delivered head and claims its successor
// writes the cursor once (moved and leased), not twice (moved, then leased): each cursor write
// is a row version, with index entries when the due time moves. 20 keys of 5 events, fewer
// than a call may claim, drained by calls that deliver what the previous one claimed: one
// lease per event and a last move per key (the read of the log inserts the cursors).
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
      return txn.exec("SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = 'tidemark_cursor'")
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
  EXPECT_EQ(db.scalar("SELECT count(*) FROM tidemark_cursor WHERE head_sequence IS NOT NULL"), "0");
}

// The successor of a delivered head is claimed in the same call, but in due order with the
// other keys' heads: an older head of another key goes first, and the successor then waits
// on its key's head, due since its predecessor was delivered, with no attempt yet, as if it
// had not been looked at.
TEST(RelayClaimHead, ADeliveredHeadsSuccessorWaitsItsTurnBehindOlderHeadsOfOtherKeys) {
  TestDatabase db;
  fill_backlog(db, 3, 2);  // acct-0: sequences 1 and 2; acct-1: sequence 1
  ingest(db);
  // By hand: acct-0's head is the oldest, then acct-1's.
  update_cursors(db, "head_due_at = now() - CASE partition_key WHEN 'acct-0' THEN interval '3 hours' "
                     "ELSE interval '2 hours' END");
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

// Status and view lag count a destination's pending and dead events (migration 0017; since
// 0029 through tidemark_undelivered, from the destination's oldest undelivered change on):
// over 100,000 delivered events never analyzed, each count reads only the undelivered
// events, never the delivered ones. Here nothing is ahead of the cursors: 3 events are dead,
// 7 dead ones revived (pending), the rest delivered.
TEST(RelayClaimHead, CountsOfUndeliveredEventsReadNoDeliveredRowWithoutStatistics) {
  TestDatabase db;
  db.scalar("ALTER TABLE tidemark_change SET (autovacuum_enabled = false)");
  fill_backlog(db, 100'010, 10);
  ingest(db);
  // By hand, as 100,000 deliveries would have left it: every cursor past its key's last
  // change, its first one given up on (and for 7 keys revived).
  db.scalar(
      "INSERT INTO tidemark_dead_letter (destination, position, sequence, status, attempts, last_error) "
      "SELECT 'ledger', c.position, 1, CASE WHEN c.partition_key < 'acct-3' THEN 'dead' ELSE 'pending' END, "
      "CASE WHEN c.partition_key < 'acct-3' THEN 1 ELSE 0 END, 'HTTP 400' "
      "FROM tidemark_change c WHERE c.key_sequence = 1");
  db.scalar(
      "UPDATE tidemark_cursor k SET through = p.last_sequence, last_sequence = p.last_sequence, "
      "head_sequence = NULL, head_due_at = NULL, advanced_at = now() "
      "FROM tidemark_partition_sequence p WHERE p.partition_key = k.partition_key");
  // A connection of its own: PostgreSQL 15 reports a session's table statistics lazily, so
  // the writer's scans could still show in its pg_stat_xact_user_tables.
  auto connection = db.connect();
  const auto reads = [&](const std::string& statement, const auto&... parameters) {
    pqxx::work txn(*connection);
    const auto result = txn.exec_params(statement, parameters...);
    const auto read = txn.exec1(
        "SELECT coalesce(sum(seq_scan), 0), coalesce(sum(idx_tup_fetch), 0) FROM pg_stat_xact_user_tables "
        "WHERE relname IN ('tidemark_change', 'tidemark_cursor')");
    std::string plan;
    for (const auto& line : txn.exec_params("EXPLAIN " + statement, parameters...)) plan += std::string(line[0].c_str()) + "\n";
    EXPECT_EQ(read[0].as<long long>(), 0) << "sequential scans of the log or the cursors:\n" << plan;
    // A few fetches per undelivered event (its change, its cursor), 10 events here: 40 at
    // most, where reading the delivered ones would be 100,000.
    EXPECT_LE(read[1].as<long long>(), 40) << "rows fetched:\n" << statement;
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
// the operator and due times edited by hand. After every step each head is its key's next
// undelivered change, and nothing claimed has an earlier undelivered change of its key.
TEST(RelayClaimHead, HeadsStayTheLowestPendingSequenceThroughEveryMark) {
  const std::uint32_t seed = 1512;
  std::cout << "seed " << seed << '\n';
  std::mt19937 random(seed);
  TestDatabase db;
  fill_backlog(db, 600, 12);
  auto connection = db.connect();
  // By hand: the waiting events (heads not in flight, revived letters) whose position
  // matches `which` are made due at `when`.
  const auto make_due = [&](const std::string& when, const std::string& which) {
    db.scalar("UPDATE tidemark_cursor k SET head_due_at = " + when + " FROM tidemark_change c "
              "WHERE c.partition_key = k.partition_key AND c.key_sequence = k.head_sequence AND NOT k.head_leased "
              "AND " + which);
    db.scalar("UPDATE tidemark_dead_letter c SET next_attempt_at = " + when +
              " WHERE c.status = 'pending' AND NOT c.leased AND " + which);
  };
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
      // An operator makes some waiting events due later.
      make_due("now() + interval '1 hour'", "c.position % 7 = " + std::to_string(random() % 7));
    }
    in_flight = claim(*connection, 1 + random() % 16, delivered);
    delivered.clear();
    ASSERT_EQ(wrong_heads(db), "");
    ASSERT_EQ(claimed_out_of_order(db, in_flight), "");
  }
  // Everything left goes: the hour-later ones too, once due.
  make_due("now()", "true");
  EXPECT_EQ(wrong_heads(db), "");
  for (int round = 0; round < 400; ++round) {
    in_flight = claim(*connection, 64, in_flight);
    ASSERT_EQ(claimed_out_of_order(db, in_flight), "");
    if (in_flight.empty()) break;
  }
  EXPECT_EQ(db.scalar("SELECT count(*) FROM outbox WHERE status = 'pending'"), "0");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM tidemark_cursor WHERE head_sequence IS NOT NULL"), "0");
}

// A head whose successor is committed by a writer while the relay delivers the head: the
// relay's mark does not see the new change and leaves the key without a head, and the
// destination's next read of the log gives it one, so the event is sent. (Before the change
// log the mark waited for the writer's lock on the key's counter; it no longer waits.)
TEST(RelayClaimHead, DeliveryOfTheLastPendingEventWhileAWriterAddsOneLeavesTheNewOneClaimable) {
  TestDatabase db;
  fill_backlog(db, 1, 1);
  auto relay = db.connect();
  const auto first = claim(*relay, 10);
  ASSERT_EQ(first.size(), 1u);
  // The writer holds the key's counter row, as apply_batch.sql does until its commit.
  auto writer = db.connect();
  pqxx::work write(*writer);
  testing::append_change(write, {"ledger"}, "acct-0", "tx-late:1", "{}");
  auto marked = std::async(std::launch::async, [&] { claim(*relay, 0, {first[0]}); });
  EXPECT_EQ(marked.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "the mark waited for the writer";
  write.commit();
  marked.get();
  const auto next = claim(*relay, 10);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(db.scalar("SELECT idempotency_key FROM outbox WHERE id = " + std::to_string(next[0].id)),
            "ledger:tx-late:1");
  EXPECT_EQ(wrong_heads(db), "");
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
// but none, and 0029 turns the rows into the log with a cursor per key standing after its last
// delivered or dead event, its head the next pending one with the due time it had; rows without
// a key or sequence stay claimable, each a stream of its own (and still without a key or a
// sequence as the relay sees them). The claimed events keep their
// keys and sequences. In a schema of its own, as in migrate_test.cpp.
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
  // Each: key, through, the highest sequence the destination issued (its migrated rows keep
  // theirs), head (key_sequence), its due second.
  const auto heads = txn.exec(
      "SELECT partition_key || ' ' || through || ' ' || last_sequence || ' ' || coalesce(head_sequence::text, 'none') "
      "|| ' ' || coalesce(to_char(head_due_at AT TIME ZONE 'UTC', 'SS'), 'none') FROM tidemark_cursor "
      "ORDER BY partition_key");
  std::vector<std::string> texts;
  for (const auto& row : heads) texts.push_back(row[0].c_str());
  EXPECT_EQ(texts, (std::vector<std::string>{"A 2 4 3 03", "B 1 1 none none", "C 0 7 1 07", "legacy 0 0 1 00"}));
  EXPECT_EQ(txn.exec("SELECT string_agg(idempotency_key || ' ' || status, ', ' ORDER BY idempotency_key) FROM outbox")
                [0][0].c_str(),
            std::string("a1 delivered, a2 dead, a3 pending, a4 pending, b1 delivered, c7 pending, legacy pending"));
  std::vector<std::string> claimed;
  for (const auto& row : txn.exec_params(std::string(sql::kRelayClaim), "{ledger}", "{10}", 10LL, kLeaseMs, "{}", "{}")) {
    claimed.push_back(std::string(row[2].c_str()) + "/" + row[4].c_str());
  }
  std::sort(claimed.begin(), claimed.end());
  EXPECT_EQ(claimed, (std::vector<std::string>{"a3/3", "c7/7", "legacy/"}));  // legacy: no sequence, as before
}

}  // namespace
}  // namespace tidemark::pipeline
