// A declared entity's generated apply statement (pipeline/store/entity_sql.*) against a real
// PostgreSQL: versions COPYed into its stage by hand, as the committer
// will, then the one statement per batch. Verdicts, the stored rows, the outbox rows
// (keys, partitions, sequences, payloads), replays and a concurrent writer.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <future>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/core/entity.hpp"
#include "pipeline/store/entity_schema.hpp"
#include "pipeline/store/entity_sql.hpp"
#include "pipeline/store/pg/copy_writer.hpp"
#include "pipeline/store/pg/database.hpp"
#include "sql/statements.hpp"
#include "tests/support/entity_fixtures.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::pipeline {
namespace {

using testing::query_rows;
using testing::Rows;
using testing::TestDatabase;

// One field of every type, extras kept, partitioned by a text field.
EntityDeclaration orders() {
  return testing::declare_entity(
      "orders",
      {
          {.name = "customer_id", .type = FieldType::kText, .max_length = 64},
          {.name = "amount", .type = FieldType::kDecimal, .required = true, .precision = 14, .scale = 4},
          {.name = "placed_at", .type = FieldType::kTimestamp},
          {.name = "quantity", .type = FieldType::kInteger},
          {.name = "paid", .type = FieldType::kBoolean},
          {.name = "ship_date", .type = FieldType::kDate},
          {.name = "meta", .type = FieldType::kJson},
      },
      {.partition_by = "customer_id", .extra_fields = ExtraFields::kKeep});
}

// Stages one COPY line for `sql`'s entity and applies it on `connection`, committed; the
// verdict of each row the statement returns.
std::vector<std::string> apply_line(pqxx::connection& connection, const db::EntitySql& sql, const std::string& line) {
  pqxx::work txn(connection);
  txn.exec(sql.create_stage);
  {
    db::CopyWriter copy(txn, sql.stage_table, sql.stage_columns);
    copy.write_line(line);
    copy.complete();
  }
  std::vector<std::string> verdicts;
  for (const auto& row : txn.exec_params(sql.apply_batch, "p", "{ledger}")) verdicts.push_back(row["verdict"].c_str());
  txn.commit();
  return verdicts;
}

// A staged version: every column in the stage's COPY order, as COPY text (\N absent).
struct Staged {
  std::string key;
  std::string revision;
  std::vector<std::string> values;  // customer_id, amount, placed_at, quantity, paid, ship_date, meta, extra
  bool candidate = true;
};

class EntityApplyTest : public ::testing::Test {
 protected:
  EntityApplyTest() : entity_(orders()), sql_(db::build_entity_sql(entity_)) {
    auto connection = db_.connect();
    db::ensure_entity_table(*connection, entity_);
  }

  // COPYs `versions` into the stage, as the committer does, their index in the batch as ord.
  void stage(pqxx::work& txn, const std::vector<Staged>& versions) {
    txn.exec(sql_.create_stage);
    {
      std::vector<std::string> columns;
      for (const auto& column : sql_.stage_columns) columns.push_back(db::quote_identifier(column));
      db::CopyWriter copy(txn, db::quote_identifier(sql_.stage_table), columns);
      for (std::size_t ord = 0; ord < versions.size(); ++ord) {
        std::string line = std::to_string(ord) + "\t" + versions[ord].key + "\t" + versions[ord].revision;
        for (const auto& value : versions[ord].values) line += "\t" + value;
        line += versions[ord].candidate ? "\tt" : "\tf";
        copy.write_line(line);
      }
      copy.complete();
    }
  }

  // Stages `versions` in `txn` and runs the apply statement; returns (ord, verdict, changes
  // logged) per row it returns.
  Rows apply(pqxx::work& txn, const std::vector<Staged>& versions) {
    stage(txn, versions);
    Rows verdicts;
    for (const auto& row : txn.exec_params(sql_.apply_batch, "orders_daily", "{ledger,audit}")) {
      verdicts.push_back({row["ord"].c_str(), row["verdict"].c_str(), row["changes_logged"].c_str()});
    }
    return verdicts;
  }

  Rows apply(const std::vector<Staged>& versions) {
    auto connection = db_.connect();
    pqxx::work txn(*connection);
    Rows verdicts = apply(txn, versions);
    txn.commit();
    return verdicts;
  }

  // Applies `versions` on `second` while `first` holds an uncommitted write of one of their
  // keys: once the second batch waits on that row, `first` commits. Returns the second
  // batch's serialization failure (SQLSTATE 40001, what the committer retries), or "no error".
  std::string apply_behind(pqxx::work& first, pqxx::connection& second, const std::vector<Staged>& versions) {
    const int second_pid = second.backendpid();
    auto waiter = std::async(std::launch::async, [&] {
      pqxx::work txn(second);
      try {
        apply(txn, versions);
      } catch (const pqxx::serialization_failure& error) {
        EXPECT_TRUE(db::is_transient(error));
        return std::string(error.what());
      }
      return std::string("no error");
    });
    const std::string waiting = "SELECT count(*) FROM pg_stat_activity WHERE pid = " + std::to_string(second_pid) +
                                " AND wait_event_type = 'Lock'";
    while (db_.scalar(waiting) != "1") {
      if (waiter.wait_for(std::chrono::milliseconds(1)) == std::future_status::ready) {
        ADD_FAILURE() << "the second batch ended without waiting on the row";
        return waiter.get();
      }
    }
    first.commit();
    return waiter.get();
  }

  Rows outbox() const {
    return query_rows(db_,
                      "SELECT destination, idempotency_key, partition_key, sequence, payload::text FROM outbox "
                      "ORDER BY id");
  }

  TestDatabase db_;
  EntityDeclaration entity_;
  db::EntitySql sql_;
};

const Staged kFirst{"o-1", "1",
                    {"c-1", "2.25", "2026-03-01 10:00:00.5+02", "3", "t", "2026-03-04", R"({"gift": true})",
                     R"({"channel": "web"})"}};
const Staged kSecond{"o-2", "1", {"c-1", "10", "\\N", "\\N", "\\N", "\\N", "\\N", "\\N"}};
// No customer: its partition is its key.
const Staged kThird{"o-3", "7", {"\\N", "-0.5", "\\N", "-9223372036854775808", "f", "0001-01-01", "[1, null]", "\\N"}};

TEST_F(EntityApplyTest, AFirstBatchInsertsEveryVersionAndWritesOneOutboxRowPerDestination) {
  EXPECT_EQ(apply({kFirst, kSecond, kThird}),
            (Rows{{"0", "inserted", "3"}, {"1", "inserted", "3"}, {"2", "inserted", "3"}}));
  EXPECT_EQ(query_rows(db_,
                       "SELECT order_id, version, customer_id, amount::text, placed_at AT TIME ZONE 'UTC', quantity, "
                       "paid, ship_date, meta::text, extra::text, tidemark_pipeline, tidemark_updated_at IS NOT NULL "
                       "FROM orders ORDER BY order_id"),
            (Rows{{"o-1", "1", "c-1", "2.2500", "2026-03-01 08:00:00.5", "3", "t", "2026-03-04", R"({"gift": true})",
                   R"({"channel": "web"})", "orders_daily", "t"},
                  {"o-2", "1", "c-1", "10.0000", "<null>", "<null>", "<null>", "<null>", "<null>", "<null>",
                   "orders_daily", "t"},
                  {"o-3", "7", "<null>", "-0.5000", "<null>", "-9223372036854775808", "f", "0001-01-01", "[1, null]",
                   "<null>", "orders_daily", "t"}}));
  const std::string first_fields =
      R"("fields": {"meta": {"gift": true}, "paid": true, "extra": {"channel": "web"}, "amount": "2.2500", )"
      R"("quantity": 3, "placed_at": "2026-03-01T08:00:00.500000Z", "ship_date": "2026-03-04", "customer_id": "c-1"})";
  const std::string second_fields =
      R"("fields": {"meta": null, "paid": null, "extra": null, "amount": "10.0000", "quantity": null, )"
      R"("placed_at": null, "ship_date": null, "customer_id": "c-1"})";
  const std::string third_fields =
      R"("fields": {"meta": [1, null], "paid": false, "extra": null, "amount": "-0.5000", )"
      R"("quantity": -9223372036854775808, "placed_at": null, "ship_date": "0001-01-01", "customer_id": null})";
  // An outbox row of the first batch: destination, idempotency key, partition, sequence, payload.
  const auto row = [](const std::string& destination, const std::string& key, const std::string& revision,
                      const std::string& partition, const std::string& sequence,
                      const std::string& fields) -> Rows::value_type {
    const std::string event_id = destination + ":orders:" + key + ":" + revision;
    return {destination, event_id, partition, sequence,
            R"({"key": ")" + key + R"(", "entity": "orders", )" + fields + R"(, "event_id": ")" + event_id +
                R"(", "pipeline": "orders_daily", "previous": null, "revision": )" + revision +
                R"(, "sequence": )" + sequence + R"(, "partition": ")" + partition + R"("})"};
  };
  EXPECT_EQ(outbox(), (Rows{row("audit", "o-1", "1", "c-1", "1", first_fields),
                            row("ledger", "o-1", "1", "c-1", "1", first_fields),
                            row("audit", "o-2", "1", "c-1", "2", second_fields),
                            row("ledger", "o-2", "1", "c-1", "2", second_fields),
                            row("audit", "o-3", "7", "o-3", "1", third_fields),
                            row("ledger", "o-3", "7", "o-3", "1", third_fields)}));
}

// What the outbox shows per destination is logged once per change: its key without a
// destination, every destination, and the payload without event_id and sequence.
TEST_F(EntityApplyTest, EachChangeIsLoggedOnceForAllItsDestinations) {
  apply({kFirst, kSecond, kThird});
  EXPECT_EQ(query_rows(db_,
                       "SELECT partition_key, key_sequence, entity, event_key, destinations, "
                       "payload ? 'event_id' OR payload ? 'sequence' FROM tidemark_change ORDER BY position"),
            (Rows{{"c-1", "1", "orders", "orders:o-1:1", "{ledger,audit}", "f"},
                  {"c-1", "2", "orders", "orders:o-2:1", "{ledger,audit}", "f"},
                  {"o-3", "1", "orders", "orders:o-3:7", "{ledger,audit}", "f"}}));
}

// A pipeline without destinations logs nothing and takes no sequence.
TEST_F(EntityApplyTest, ABatchWithoutDestinationsLogsNothing) {
  auto connection = db_.connect();
  pqxx::work txn(*connection);
  stage(txn, {kFirst});
  const auto rows = txn.exec_params(sql_.apply_batch, "orders_daily", "{}");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_STREQ(rows[0]["verdict"].c_str(), "inserted");
  EXPECT_STREQ(rows[0]["changes_logged"].c_str(), "0");
  txn.commit();
  EXPECT_EQ(db_.scalar("SELECT (SELECT count(*) FROM tidemark_change) + (SELECT count(*) FROM "
                       "tidemark_partition_sequence)"),
            "0");
}

TEST_F(EntityApplyTest, LaterBatchesUpdateKeepUnchangedRefuseConflictsAndIgnoreStaleRevisions) {
  apply({kFirst, kSecond, kThird});
  Staged updated = kFirst;
  updated.revision = "2";
  updated.values[1] = "2.3";   // amount
  updated.values[7] = "\\N";   // extra
  Staged conflicting = kThird;
  conflicting.values[5] = "0001-01-02";  // ship_date differs at the same revision
  Staged superseded = kSecond;  // an earlier version of o-2 in the same batch: not a candidate
  superseded.revision = "0";
  superseded.candidate = false;
  EXPECT_EQ(apply({updated, superseded, kSecond, conflicting}),
            (Rows{{"0", "updated", "1"}, {"2", "unchanged", "1"}, {"3", "conflict", "1"}}));
  EXPECT_EQ(query_rows(db_, "SELECT version, amount::text, extra IS NULL FROM orders WHERE order_id = 'o-1'"),
            (Rows{{"2", "2.3000", "t"}}));
  EXPECT_EQ(query_rows(db_, "SELECT ship_date FROM orders WHERE order_id = 'o-3'"), (Rows{{"0001-01-01"}}));
  const Rows rows = outbox();
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[6], (Rows::value_type{
                         "audit", "audit:orders:o-1:2", "c-1", "3",
                         R"({"key": "o-1", "entity": "orders", "fields": {"meta": {"gift": true}, "paid": true, )"
                         R"("extra": null, "amount": "2.3000", "quantity": 3, )"
                         R"("placed_at": "2026-03-01T08:00:00.500000Z", )"
                         R"("ship_date": "2026-03-04", "customer_id": "c-1"}, "event_id": "audit:orders:o-1:2", )"
                         R"("pipeline": "orders_daily", "previous": {"fields": {"meta": {"gift": true}, "paid": true, )"
                         R"("extra": {"channel": "web"}, "amount": "2.2500", "quantity": 3, )"
                         R"("placed_at": "2026-03-01T08:00:00.500000Z", "ship_date": "2026-03-04", )"
                         R"("customer_id": "c-1"}, )"
                         R"("revision": 1}, "revision": 2, "sequence": 3, "partition": "c-1"})"}));
  EXPECT_EQ(rows[7][1], "ledger:orders:o-1:2");
  EXPECT_EQ(rows[7][3], "3");

  Staged stale = kFirst;  // revision 1 of o-1, now stored at 2
  Staged fourth = kSecond;
  fourth.key = "o-4";
  const std::vector<Staged> third_batch = {stale, fourth};
  EXPECT_EQ(apply(third_batch), (Rows{{"0", "stale", "1"}, {"1", "inserted", "1"}}));
  EXPECT_EQ(query_rows(db_, "SELECT destination, idempotency_key, sequence FROM outbox ORDER BY id OFFSET 8"),
            (Rows{{"audit", "audit:orders:o-4:1", "4"}, {"ledger", "ledger:orders:o-4:1", "4"}}));
  // One counter per partition, whatever the destinations.
  EXPECT_EQ(query_rows(db_, "SELECT partition_key, last_sequence FROM tidemark_partition_sequence ORDER BY partition_key"),
            (Rows{{"c-1", "4"}, {"o-3", "1"}}));
}

TEST_F(EntityApplyTest, AReplayedBatchWritesNothingNew) {
  const std::vector<Staged> batch = {kFirst, kSecond, kThird};
  apply(batch);
  const Rows state = query_rows(db_, "SELECT * FROM orders ORDER BY order_id");
  const Rows effects = outbox();
  EXPECT_EQ(apply(batch), (Rows{{"0", "unchanged", "0"}, {"1", "unchanged", "0"}, {"2", "unchanged", "0"}}));
  EXPECT_EQ(query_rows(db_, "SELECT * FROM orders ORDER BY order_id"), state);
  EXPECT_EQ(outbox(), effects);
  EXPECT_EQ(db_.scalar("SELECT sum(last_sequence) FROM tidemark_partition_sequence"), "3");
}

// The concurrent-writer rule per entity (docs/entities.md "Two pipelines on one entity"): a batch that read a key's stored row (none)
// before another transaction wrote it must not report what its snapshot said; it fails as a
// serialization failure and the committer retries it.
TEST_F(EntityApplyTest, ABatchWhoseKeyAnotherTransactionWroteFailsAsASerializationFailure) {
  auto first_connection = db_.connect();
  pqxx::work first(*first_connection);
  EXPECT_EQ(apply(first, {kFirst}), (Rows{{"0", "inserted", "1"}}));

  // The second batch waits on the row the first inserted; once it waits, the first commits.
  auto second_connection = db_.connect();
  const std::string error = apply_behind(first, *second_connection, {kFirst});
  EXPECT_NE(error.find("another transaction wrote 1 of this batch's keys"), std::string::npos) << error;
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM outbox"), "2");
  // Retried on a new snapshot, the batch sees the row and says so.
  pqxx::work retry(*second_connection);
  EXPECT_EQ(apply(retry, {kFirst}), (Rows{{"0", "unchanged", "0"}}));
}

// Conflicts compare values as stored: numeric at its scale, jsonb by value (key order and
// spacing aside). `extra` is compared like a declared field.
// Two pipelines on one key, an update this time: the second batch's snapshot sees revision 1,
// the first commits revision 2 while the second waits on the row, and revision 3 would pass
// the revision filter (3 > 2) with an event whose `previous` is revision 1. It must fail as a
// serialization failure instead, so the retry's snapshot sees revision 2.
TEST_F(EntityApplyTest, AnUpdateOverARowWrittenSinceTheSnapshotFailsAsASerializationFailure) {
  apply({kFirst});
  Staged second_revision = kFirst;
  second_revision.revision = "2";
  second_revision.values[1] = "3.25";
  Staged third_revision = kFirst;
  third_revision.revision = "3";
  third_revision.values[1] = "4.25";
  auto first_connection = db_.connect();
  pqxx::work first(*first_connection);
  EXPECT_EQ(apply(first, {second_revision}), (Rows{{"0", "updated", "1"}}));

  auto second_connection = db_.connect();
  const std::string error = apply_behind(first, *second_connection, {third_revision});
  EXPECT_NE(error.find("another transaction wrote 1 of this batch's keys"), std::string::npos) << error;
  // Retried on a new snapshot, revision 3's events carry revision 2 as their previous.
  pqxx::work retry(*second_connection);
  EXPECT_EQ(apply(retry, {third_revision}), (Rows{{"0", "updated", "1"}}));
  retry.commit();
  EXPECT_EQ(db_.scalar("SELECT string_agg(DISTINCT (payload->'previous'->>'revision') || ' ' || "
                       "(payload->'previous'->'fields'->>'amount'), ',') FROM outbox WHERE payload->>'revision' = '3'"),
            "2 3.2500");
}

// The statement checks its upsert by counts (changes against rows upserted, expected inserts
// against rows inserted), not key by key. Both surprises at once must still fail it, and be
// counted: a key the snapshot saw no row of that another transaction inserts (the upsert
// skips it: one upsert fewer, one insert fewer) and a key the snapshot saw a row of that
// another transaction deletes (the upsert inserts it: one insert more). The insert counts
// alone would cancel out.
TEST_F(EntityApplyTest, ASkippedKeyAndADeletedRowSinceTheSnapshotBothFailTheBatch) {
  apply({kSecond});
  Staged second_revision = kSecond;
  second_revision.revision = "2";
  auto first_connection = db_.connect();
  pqxx::work first(*first_connection);
  EXPECT_EQ(apply(first, {kFirst}), (Rows{{"0", "inserted", "1"}}));
  first.exec("DELETE FROM orders WHERE order_id = 'o-2'");

  auto second_connection = db_.connect();
  const std::string error = apply_behind(first, *second_connection, {kFirst, second_revision});
  EXPECT_NE(error.find("another transaction wrote 2 of this batch's keys"), std::string::npos) << error;
  // Retried on a new snapshot: o-1 as the first batch left it, o-2 inserted anew.
  pqxx::work retry(*second_connection);
  EXPECT_EQ(apply(retry, {kFirst, second_revision}), (Rows{{"0", "unchanged", "1"}, {"1", "inserted", "1"}}));
}

TEST_F(EntityApplyTest, ASameRevisionIsComparedAsStoredWithExtraIncluded) {
  apply({kFirst});
  Staged same = kFirst;
  same.values[1] = "2.250";                      // amount 2.25 at another scale
  same.values[6] = R"({ "gift" : true })";       // meta, spaced differently
  same.values[2] = "2026-03-01 08:00:00.5+00";  // placed_at, the same instant in UTC
  Staged other_extra = kFirst;
  other_extra.values[7] = R"({"channel": "app"})";
  EXPECT_EQ(apply({same}), (Rows{{"0", "unchanged", "0"}}));
  EXPECT_EQ(apply({other_extra}), (Rows{{"0", "conflict", "0"}}));
  EXPECT_EQ(db_.scalar("SELECT extra::text FROM orders"), R"({"channel": "web"})");
}

// Beside a conflict verdict the statement returns the stored row's values in the checker's
// canonical form (what a record's values are), so the detail names only fields that differ.
TEST_F(EntityApplyTest, AConflictReturnsTheStoredRowInCanonicalForm) {
  apply({kFirst});
  Staged other_extra = kFirst;
  other_extra.values[7] = R"({"channel": "app"})";
  auto connection = db_.connect();
  pqxx::work txn(*connection);
  stage(txn, {other_extra});
  const auto rows = txn.exec_params(sql_.apply_batch, "orders_daily", "{ledger}");
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_STREQ(rows[0]["verdict"].c_str(), "conflict");
  std::vector<std::string> stored;
  for (int column = 3; column < static_cast<int>(rows[0].size()); ++column) stored.emplace_back(rows[0][column].c_str());
  // The checker's canonical forms of kFirst's values as a record would carry them.
  EXPECT_EQ(stored, (std::vector<std::string>{"c-1", "2.2500", "2026-03-01T08:00:00.500000Z", "3", "true",
                                              "2026-03-04", R"({"gift": true})", R"({"channel": "web"})"}));
}

// The sum of (rows × loops) over the plan's scans of `relation`: the rows a statement read from it.
double rows_read(const boost::json::value& node, const std::string& relation) {
  const auto& plan = node.as_object();
  double rows = 0;
  const auto* name = plan.if_contains("Relation Name");
  if (name != nullptr && name->as_string() == relation &&
      std::string_view(plan.at("Node Type").as_string()).find("Scan") != std::string_view::npos) {
    rows += plan.at("Actual Rows").to_number<double>() * plan.at("Actual Loops").to_number<double>();
  }
  if (const auto* children = plan.if_contains("Plans")) {
    for (const auto& child : children->as_array()) rows += rows_read(child, relation);
  }
  return rows;
}

// Stored rows are read by key: a batch reads its own keys' rows, however many the table holds.
// The stage is never analyzed; on a connection with PostgreSQL's default random_page_cost
// the planner hashes (or merges) it with a scan of the whole table, and every batch costs more
// than the one before it. The committer's connection setup (commit/create_stage.sql) prices
// the probes as what they are, cached reads.
TEST_F(EntityApplyTest, ABatchReadsOnlyTheStoredRowsOfItsOwnKeys) {
  db_.scalar(
      "INSERT INTO orders (order_id, version, customer_id, amount) "
      "SELECT 'o-' || i, 1, 'c-' || i % 100, i FROM generate_series(1, 20000) i");
  db_.scalar("ANALYZE orders");
  // 1,000 updates of stored rows and 1,000 new keys.
  std::vector<Staged> versions;
  for (int i = 19001; i <= 21000; ++i) {
    versions.push_back({"o-" + std::to_string(i), "2",
                        {"c-" + std::to_string(i % 100), "1.5", "\\N", "\\N", "\\N", "\\N", "\\N", "\\N"}});
  }
  auto connection = db_.connect();
  {
    pqxx::nontransaction setup(*connection);
    setup.exec(std::string(sql::kCommitCreateStage));
  }
  pqxx::work txn(*connection);
  stage(txn, versions);
  const auto explained = txn.exec_params1("EXPLAIN (ANALYZE, FORMAT JSON) " + sql_.apply_batch, "orders_daily", "{ledger}");
  const auto plan = boost::json::parse(explained[0].c_str()).as_array().at(0).at("Plan");
  // A probe of each version's key, and one more for each update (the snapshot guard): about
  // 2,000 rows. A scan of the table reads 20,000.
  const double read = rows_read(plan, "orders");
  EXPECT_GT(read, 0.0);
  EXPECT_LE(read, 2.0 * static_cast<double>(versions.size())) << explained[0].c_str();
}

// jsonb_build_object takes at most 100 arguments: a payload of 60 fields is built in parts.
// Partitioned by an integer field, whose value is the partition as text. Fields named like
// the statement's own columns and aliases (destination, ord, candidate, s, e) are no trouble.
TEST(EntityApply, SixtyFieldsAllReachThePayloadAndAnIntegerPartitionIsItsText) {
  TestDatabase db;
  EntityDeclaration wide = testing::declare_entity("wide", {}, {.key = "id", .revision = "rev", .partition_by = "f0"});
  std::string line = "0\tw-1\t1";
  const std::vector<std::string> named = {"destination", "ord", "candidate", "s", "e"};
  for (int i = 0; i < 60; ++i) {
    const auto index = static_cast<std::size_t>(i);
    const std::string name = i >= 1 && index <= named.size() ? named[index - 1] : "f" + std::to_string(i);
    wide.fields.push_back({.name = name, .type = FieldType::kInteger});
    line += "\t" + std::to_string(100 + i);
  }
  line += "\tt";
  auto connection = db.connect();
  db::ensure_entity_table(*connection, wide);
  ASSERT_EQ(apply_line(*connection, db::build_entity_sql(wide), line), std::vector<std::string>{"inserted"});
  EXPECT_EQ(db.scalar("SELECT partition_key FROM outbox"), "100");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM outbox, jsonb_each(payload->'fields')"), "60");
  EXPECT_EQ(db.scalar("SELECT payload->'fields'->>'f59' FROM outbox"), "159");
  EXPECT_EQ(db.scalar("SELECT payload->'fields'->>'destination' FROM outbox"), "101");
  EXPECT_EQ(db.scalar("SELECT destination || ' ' || e || ' ' || ord FROM wide"), "101 105 102");
  EXPECT_EQ(db.scalar("SELECT payload->>'partition' FROM outbox"), "100");
}

// An entity may declare no fields: a key and a revision alone, partitioned by the key. Its
// payloads carry empty `fields`, and a same revision can never conflict.
TEST(EntityApply, AnEntityWithoutFieldsIsPartitionedByItsKeyAndNeverConflicts) {
  TestDatabase db;
  const EntityDeclaration bare = testing::declare_entity("ticks", {}, {.key = "id", .revision = "rev"});
  auto connection = db.connect();
  db::ensure_entity_table(*connection, bare);
  const auto sql = db::build_entity_sql(bare);
  EXPECT_EQ(apply_line(*connection, sql, "0\tt-1\t1\tt"), std::vector<std::string>{"inserted"});
  EXPECT_EQ(apply_line(*connection, sql, "0\tt-1\t1\tt"), std::vector<std::string>{"unchanged"});
  EXPECT_EQ(apply_line(*connection, sql, "0\tt-1\t2\tt"), std::vector<std::string>{"updated"});
  EXPECT_EQ(query_rows(db, "SELECT partition_key, sequence, payload::text FROM outbox ORDER BY id"),
            (Rows{{"t-1", "1",
                   R"({"key": "t-1", "entity": "ticks", "fields": {}, "event_id": "ledger:ticks:t-1:1", )"
                   R"("pipeline": "p", "previous": null, "revision": 1, "sequence": 1, "partition": "t-1"})"},
                  {"t-1", "2",
                   R"({"key": "t-1", "entity": "ticks", "fields": {}, "event_id": "ledger:ticks:t-1:2", )"
                   R"("pipeline": "p", "previous": {"fields": {}, "revision": 1}, "revision": 2, "sequence": 2, )"
                   R"("partition": "t-1"})"}}));
}

}  // namespace
}  // namespace tidemark::pipeline
