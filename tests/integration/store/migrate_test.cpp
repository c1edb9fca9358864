// Migrations are embedded as one generated list (sql/statements.hpp, cmake/embed_sql.cmake):
// every file under sql/migrations/ is in it, in name order, and migrate applies each once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string_view>

#include "pipeline/store/migrate.hpp"
#include "pipeline/store/pg/database.hpp"
#include "sql/statements.hpp"
#include "tests/support/change_log.hpp"
#include "tests/support/change_log_store.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::pipeline {
namespace {

using testing::query_rows;
using testing::Rows;
using testing::TestDatabase;

// The file names under sql/migrations/ in the source tree, sorted.
std::vector<std::string> migration_files() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TIDEMARK_SOURCE_DIR) + "/sql/migrations")) {
    if (entry.path().extension() == ".sql") names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Makes the schema `schema`, the connection's search path for the session (migrate then works
// in it too: the test database is migrated already), and applies and records there, as
// `migrate` would, every migration whose version sorts before `first_not_applied`.
void migrate_schema_before(pqxx::connection& connection, const std::string& schema,
                           std::string_view first_not_applied) {
  {
    pqxx::nontransaction txn(connection);
    txn.exec("CREATE SCHEMA " + schema);
    txn.exec("SET search_path TO " + schema);
    txn.exec(std::string(sql::kMigrateCreateSchemaMigrations));
  }
  for (const auto& migration : sql::kMigrations) {
    if (std::string_view(migration.version) >= first_not_applied) break;
    pqxx::work txn(connection);
    txn.exec(std::string(migration.text));
    txn.exec_params(std::string(sql::kMigrateRecordApplied), std::string(migration.version));
    txn.commit();
  }
}

// The rows of `query`, NULL as "<null>", read on the connection (so in its search path).
Rows rows(pqxx::connection& connection, const std::string& query) {
  pqxx::nontransaction txn(connection);
  Rows result;
  for (const auto& row : txn.exec(query)) {
    std::vector<std::string> values;
    for (const auto& field : row) values.push_back(field.is_null() ? "<null>" : field.c_str());
    result.push_back(std::move(values));
  }
  return result;
}

TEST(Migrate, EmbedsEveryMigrationFileInNameOrder) {
  std::vector<std::string> embedded;
  for (const auto& migration : sql::kMigrations) {
    embedded.emplace_back(migration.version);
    EXPECT_FALSE(migration.text.empty()) << migration.version;
  }
  EXPECT_EQ(embedded, migration_files());
}

TEST(Migrate, AppliesEachMigrationOnceInNameOrder) {
  TestDatabase db;  // migrated once already
  auto connection = db.connect();
  db::migrate(*connection);  // a second time: nothing to apply
  Rows expected;
  for (const auto& name : migration_files()) expected.push_back({name});
  EXPECT_EQ(query_rows(db, "SELECT version FROM schema_migrations ORDER BY applied_at, version"), expected);
}

// A database at 0010 with data upgrades. In a schema of its own (the test database
// is migrated already): 0001..0010 are applied and recorded as `migrate` would, rows are
// written as that schema knew them, and `migrate` then applies 0011 to them.
TEST(Migrate, RowsWrittenAt0010KeepTheirPositionsAndDecodeContextsAfter0011) {
  TestDatabase db;
  auto connection = db.connect();
  migrate_schema_before(*connection, "at0010", "0011");
  {
    pqxx::work txn(*connection);
    // Before 0007 a name was stored as it was (file_bytes NULL), backslash included; since,
    // escaped, with its bytes beside it.
    txn.exec(R"(INSERT INTO checkpoint (pipeline, source, position, file, file_bytes, byte_offset) VALUES
                  ('old', '/in', 'x\y.csv:7', 'x\y.csv', NULL, 7),
                  ('new', '/in', 'b\xe9.csv:10', 'b\xe9.csv', '\x62e92e637376', 10))");
    txn.exec(R"(INSERT INTO quarantine (pipeline, source, reason, detail, raw, format, csv_header, position) VALUES
                  ('p', '/in', 'invalid', 'amount', 'tx,1,NaN', 'csv', 'transaction_id,source_revision,amount', 'a.csv:2 (byte 38)'),
                  ('p', '/in', 'invalid', 'amount', '{"amount":1}', 'jsonl', NULL, 'a.jsonl:1 (byte 0)'))");
    txn.commit();
  }
  db::migrate(*connection);

  EXPECT_EQ(rows(*connection, "SELECT version FROM schema_migrations WHERE version > '0010_run_stopped.sql' "
                 "AND version < '0012' ORDER BY version"),
            (Rows{{"0011_source_neutral_positions.sql"}}));
  // The file source's position text, as it parses it: the old name's backslash escaped.
  EXPECT_EQ(rows(*connection, "SELECT pipeline, position FROM checkpoint ORDER BY pipeline"),
            (Rows{{"new", "b\\xe9.csv:10"}, {"old", "x\\\\y.csv:7"}}));
  EXPECT_EQ(rows(*connection, "SELECT column_name FROM information_schema.columns WHERE table_schema = 'at0010' "
                 "AND table_name = 'checkpoint' AND column_name IN ('file', 'file_bytes', 'byte_offset')"),
            Rows{});
  EXPECT_EQ(rows(*connection, "SELECT format, decode_context FROM quarantine ORDER BY id"),
            (Rows{{"csv", "transaction_id,source_revision,amount"}, {"jsonl", ""}}));
  // 0012: every earlier entry is the built-in entity's, with no field named.
  EXPECT_EQ(rows(*connection, "SELECT entity, field FROM quarantine ORDER BY id"),
            (Rows{{"transaction", "<null>"}, {"transaction", "<null>"}}));
  // Any connector's format is accepted now, and a record without context stores ''.
  pqxx::nontransaction(*connection)
      .exec("INSERT INTO quarantine (pipeline, source, reason, detail, raw, format, position) "
            "VALUES ('p', 'stream', 'invalid', 'amount', 'x', 'avro', 'seq 1')");
  EXPECT_EQ(rows(*connection, "SELECT decode_context FROM quarantine WHERE format = 'avro'"), (Rows{{""}}));
}

// A database that holds what the old quarantine index let through, two open
// entries of one record (a release's new entry had the source 'quarantine', a replay then
// added one of the record's own source), upgrades to one open entry per record; and
// a release done before 0026 names its run from then on.
TEST(Migrate, QuarantineEntriesOfOneRecordKeepOneOpenEntryAfter0026) {
  TestDatabase db;
  auto connection = db.connect();
  migrate_schema_before(*connection, "at0025", "0026");
  {
    pqxx::work txn(*connection);
    txn.exec(R"(INSERT INTO runs (id, pipeline, trigger, mode, status, reason)
                VALUES (7, 'p', 'cli', 'resume', 'succeeded', 'quarantine release 1'))");
    // 1 read from /in and released; 2 its release's entry; 3 a replay's; 4 another record.
    txn.exec(R"(INSERT INTO quarantine (id, pipeline, source, reason, detail, raw, format, position, released_at,
                                        released_by, release_outcome) VALUES
                  (1, 'p', '/in', 'invalid', 'amount', 'tx,1,NaN', 'csv', 'a.csv:2', now(), 'u', 'invalid'),
                  (2, 'p', 'quarantine', 'invalid', 'amount', 'tx,1,NaN', 'csv', 'a.csv:2', NULL, NULL, NULL),
                  (3, 'p', '/in', 'invalid', 'amount', 'tx,1,NaN', 'csv', 'a.csv:2', NULL, NULL, NULL),
                  (4, 'p', '/in', 'invalid', 'amount', 'ty,1,NaN', 'csv', 'a.csv:3', NULL, NULL, NULL))");
    txn.commit();
  }
  db::migrate(*connection);
  EXPECT_EQ(query_rows(db, "SELECT id, source, released_at IS NULL, released_by, release_outcome, release_run_id "
                           "FROM at0025.quarantine ORDER BY id"),
            (Rows{{"1", "/in", "f", "u", "invalid", "7"},
                  {"2", "/in", "f", "migration 0026 (entry 3 is this record's open entry)", "duplicate", "<null>"},
                  {"3", "/in", "t", "<null>", "<null>", "<null>"},
                  {"4", "/in", "t", "<null>", "<null>", "<null>"}}));
}

// Every state an outbox row could be in at 0028, as the relay and `outbox retry` left them,
// becomes the change log at 0029 with nothing lost or sent twice: the `outbox` view shows
// each event as it was, whatever its new id, and the relay's claim then offers the pending
// ones, and only those, each once, in the order of its key.
TEST(Migrate, OutboxRowsBecomeTheChangeLogWithNothingLostOrSentTwiceAfter0029) {
  TestDatabase db;
  auto connection = db.connect();
  migrate_schema_before(*connection, "at0028", "0029");
  {
    pqxx::work txn(*connection);
    // Written one by one, in order, so that the heads' trigger (0015) keeps each key's head
    // as the relay would have: the lowest pending sequence, with its attempts and due time.
    //   ledger a: 1-2 delivered (2 after 3 attempts), 3 the head (2 attempts, failing, due),
    //             4-5 pending behind it;
    //   audit a:  the same key, fewer events, so other sequences: t3 delivered as 1, t5 pending as 2;
    //   ledger b: 1 dead (it holds nothing back), 2 delivered, 3 the head;
    //   ledger c: 1 revived by `outbox retry` after 2 was delivered: pending below a delivered one;
    //   ledger d: 1 delivered, 3 pending: a gap from before 0005, when another destination took
    //             number 2 of the one shared counter;
    //   ledger, no key or sequence (from before 0005): one delivered, one pending with an attempt,
    //             their payloads without a sequence.
    txn.exec(R"(
      INSERT INTO outbox (destination, idempotency_key, partition_key, sequence, payload, status, attempts,
                          next_attempt_at, last_error, created_at, delivered_at)
      SELECT e.destination, e.destination || ':' || e.tx || ':1', e.account, e.sequence,
             jsonb_build_object('event_id', e.destination || ':' || e.tx || ':1', 'transaction_id', e.tx,
                                'source_revision', 1, 'amount', e.n || '.00', 'previous_amount', NULL,
                                'account_id', e.account)
               || CASE WHEN e.sequence IS NULL THEN '{}' ELSE jsonb_build_object('sequence', e.sequence) END,
             e.status, e.attempts, now() - e.due_ago * interval '1 second', e.error,
             now() - interval '1 hour' + e.n * interval '1 second',
             CASE WHEN e.status = 'delivered' THEN now() - interval '30 minutes' END
        FROM (VALUES
          (1, 'ledger', 't1', 'a', 1, 'delivered', 1, 3000, NULL),
          (2, 'ledger', 't2', 'a', 2, 'delivered', 3, 3000, NULL),
          (3, 'audit', 't3', 'a', 1, 'delivered', 1, 3000, NULL),
          (4, 'ledger', 't3', 'a', 3, 'pending', 2, 60, 'HTTP 503'),
          (5, 'ledger', 't4', 'a', 4, 'pending', 0, 3000, NULL),
          (6, 'ledger', 't5', 'a', 5, 'pending', 0, 3000, NULL),
          (7, 'audit', 't5', 'a', 2, 'pending', 0, 3000, NULL),
          (8, 'ledger', 't6', 'b', 1, 'dead', 5, 2000, 'HTTP 400'),
          (9, 'ledger', 't7', 'b', 2, 'delivered', 1, 3000, NULL),
          (10, 'ledger', 't8', 'b', 3, 'pending', 0, 3000, NULL),
          (11, 'ledger', 't10', 'c', 2, 'delivered', 1, 3000, NULL),
          (12, 'ledger', 't9', 'c', 1, 'pending', 0, 10, NULL),
          (13, 'ledger', 't20', NULL, NULL, 'delivered', 1, 3000, NULL),
          (14, 'ledger', 't21', NULL, NULL, 'pending', 1, 30, 'timeout'),
          (15, 'ledger', 't11', 'd', 1, 'delivered', 1, 3000, NULL),
          (16, 'ledger', 't12', 'd', 3, 'pending', 0, 3000, NULL)
        ) AS e(n, destination, tx, account, sequence, status, attempts, due_ago, error)
       ORDER BY e.n)");
    // Each stream's counter, as the writers kept it (the trigger makes only those of pending rows).
    txn.exec("INSERT INTO tidemark_destination_sequence AS s (destination, partition_key, last_sequence) "
             "SELECT destination, partition_key, max(sequence) FROM outbox WHERE partition_key IS NOT NULL "
             "GROUP BY 1, 2 ON CONFLICT (destination, partition_key) DO NOTHING");
    txn.commit();
  }
  ASSERT_EQ(rows(*connection, "SELECT destination, partition_key, head_sequence, head_attempts "
                              "FROM tidemark_destination_sequence ORDER BY 1, 2"),
            (Rows{{"audit", "a", "2", "0"}, {"ledger", "a", "3", "2"}, {"ledger", "b", "3", "0"},
                  {"ledger", "c", "1", "0"}, {"ledger", "d", "3", "0"}}))
      << "the old shape, as the relay kept it";
  // Everything an event is, but its id (ids are new: position * 1024 + destination number).
  const std::string events =
      "SELECT destination, idempotency_key, partition_key, sequence, payload::text, status, attempts "
      "FROM outbox ORDER BY destination, idempotency_key";
  const Rows before = rows(*connection, events);
  // When each event the relay can send is due (the events behind a key's head have no due
  // time of their own), and its last error.
  const std::string due = "SELECT idempotency_key, next_attempt_at, last_error FROM outbox WHERE status <> "
                          "'delivered' AND idempotency_key NOT IN ('ledger:t4:1', 'ledger:t5:1') ORDER BY 1";
  const Rows due_before = rows(*connection, due);
  ASSERT_EQ(before.size(), 16u);

  db::migrate(*connection);
  EXPECT_EQ(rows(*connection, "SELECT relkind FROM pg_class WHERE oid = 'outbox'::regclass"), (Rows{{"v"}}));
  EXPECT_EQ(rows(*connection, events), before);
  EXPECT_EQ(rows(*connection, due), due_before);

  // The relay's loop: claim, deliver what was claimed in the next claim, until nothing is due.
  Rows claimed;
  std::map<std::string, std::string> first_attempt;
  for (const auto& event : testing::deliver_all(*connection, {"ledger", "audit"})) {
    first_attempt.emplace(event.idempotency_key, std::to_string(event.attempt));
    claimed.push_back({event.destination, event.idempotency_key, event.partition_key.value_or("<null>"),
                       event.sequence ? std::to_string(*event.sequence) : "<null>", event.payload});
  }
  // Each pending event exactly once, as it was (key, sequence, payload)...
  Rows pending;
  for (const auto& event : before) {
    if (event[5] == "pending") pending.push_back({event[0], event[1], event[2], event[3], event[4]});
  }
  std::sort(pending.begin(), pending.end());
  Rows claimed_sorted = claimed;
  std::sort(claimed_sorted.begin(), claimed_sorted.end());
  EXPECT_EQ(claimed_sorted, pending);
  // ...each key's in its order...
  std::map<std::string, std::vector<std::string>> by_key;
  for (const auto& event : claimed) {
    if (event[2] != "<null>") by_key[event[0] + " " + event[2]].push_back(event[3]);
  }
  EXPECT_EQ(by_key, (std::map<std::string, std::vector<std::string>>{
                        {"audit a", {"2"}}, {"ledger a", {"3", "4", "5"}}, {"ledger b", {"3"}}, {"ledger c", {"1"}},
                        {"ledger d", {"3"}}}));
  // ...and an attempt counted on from those made before.
  EXPECT_EQ(first_attempt, (std::map<std::string, std::string>{{"audit:t5:1", "1"},
                                                               {"ledger:t12:1", "1"},
                                                               {"ledger:t21:1", "2"},
                                                               {"ledger:t3:1", "3"},
                                                               {"ledger:t4:1", "1"},
                                                               {"ledger:t5:1", "1"},
                                                               {"ledger:t8:1", "1"},
                                                               {"ledger:t9:1", "1"}}));
  EXPECT_EQ(rows(*connection, "SELECT idempotency_key, status FROM outbox WHERE status <> 'delivered'"),
            (Rows{{"ledger:t6:1", "dead"}}));
}

// Retention deleted delivered outbox rows but kept dead and pending ones, so the rows left of a
// key can lie below the numbers its destination already received: a new change after the
// upgrade takes the number after the highest ever issued (the old counter), never one again.
TEST(Migrate, ANewChangeAfter0029NumbersOnFromTheHighestSequenceEverIssued) {
  TestDatabase db;
  auto connection = db.connect();
  migrate_schema_before(*connection, "at0028", "0029");
  {
    pqxx::work txn(*connection);
    // a: 1 dead, 2-5 delivered and deleted by retention; b: 1 pending (re-driven), 2 delivered
    // and deleted.
    txn.exec(R"(
      INSERT INTO outbox (destination, idempotency_key, partition_key, sequence, payload, status, attempts)
      VALUES ('ledger', 'ledger:t1:1', 'a', 1, '{"event_id": "ledger:t1:1", "sequence": 1}', 'dead', 3),
             ('ledger', 'ledger:t6:1', 'b', 1, '{"event_id": "ledger:t6:1", "sequence": 1}', 'pending', 0))");
    txn.exec(R"(
      INSERT INTO tidemark_destination_sequence (destination, partition_key, last_sequence)
      VALUES ('ledger', 'a', 5), ('ledger', 'b', 2)
      ON CONFLICT (destination, partition_key) DO UPDATE SET last_sequence = EXCLUDED.last_sequence)");
    txn.commit();
  }
  db::migrate(*connection);
  {
    pqxx::work txn(*connection);
    testing::append_changes(txn, {"ledger"}, {{"a", "t7:1", R"({"n": 7})"}, {"b", "t8:1", R"({"n": 8})"}});
    txn.commit();
  }
  // Three claims, each delivering what the one before claimed: b's pending 1 and a's new
  // change, then b's new one behind its 1.
  Rows claimed;
  Rows delivered;
  for (int call = 0; call < 3; ++call) {
    pqxx::nontransaction txn(*connection);
    std::string ids = "{";
    std::string attempts = "{";
    for (const auto& event : delivered) {
      ids += (ids.size() > 1 ? "," : "") + event[0];
      attempts += (attempts.size() > 1 ? "," : "") + event[2];
    }
    delivered.clear();
    for (const auto& row : txn.exec_params(std::string(sql::kRelayClaim), "{ledger}", "{10}", 10LL, 60'000LL,
                                           ids + "}", attempts + "}")) {
      delivered.push_back({row[0].c_str(), row[2].c_str(), row[6].c_str()});
      claimed.push_back({row[2].c_str(), row[4].c_str()});
    }
  }
  std::sort(claimed.begin(), claimed.end());
  EXPECT_EQ(claimed, (Rows{{"ledger:t6:1", "1"}, {"ledger:t7:1", "6"}, {"ledger:t8:1", "3"}}));
}

}  // namespace
}  // namespace tidemark::pipeline
