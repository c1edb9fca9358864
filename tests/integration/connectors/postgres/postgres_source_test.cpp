// The postgres source against a real second database (docs/sources.md "postgres"): keyset
// reads resumed from an exact checkpoint, exact conversions, renames, quarantine and release,
// the late-commit trap under both consistencies, outages, and the catalog checks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "connectors/file/file_record_decoder.hpp"
#include "connectors/postgres/postgres_source.hpp"
#include "pipeline/run/quarantine_release.hpp"
#include "pipeline/run/run_controller.hpp"
#include "tests/support/entity_fixtures.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::connectors::postgres {
namespace {

using pipeline::FieldSpec;
using pipeline::FieldType;
using ::testing::HasSubstr;
using testing::counts_text;
using testing::query_rows;
using testing::Rows;
using testing::TestDatabase;

pipeline::EntityDeclaration orders_entity(std::size_t note_length = 8) {
  return testing::declare_entity("orders", {FieldSpec{.name = "amount", .type = FieldType::kDecimal, .precision = 24, .scale = 4},
                                            FieldSpec{.name = "placed_at", .type = FieldType::kTimestamp},
                                            FieldSpec{.name = "note", .type = FieldType::kText, .max_length = note_length}});
}

class PostgresSourceTest : public ::testing::Test {
 protected:
  PostgresSourceTest() {
    // updated_at defaults to the inserting transaction's start (now()), the late-commit
    // trap's shape: a transaction that commits late carries an old value.
    exec("CREATE TABLE shop_orders (id bigint PRIMARY KEY, version bigint NOT NULL, total numeric, "
         "placed_at timestamptz, note text, updated_at timestamptz NOT NULL DEFAULT now())");
  }

  void exec(const std::string& sql) const {
    auto connection = source_.connect();
    pqxx::work txn(*connection);
    txn.exec(sql);
    txn.commit();
  }

  Options options(Consistency consistency = Consistency::kSafetyLag) const {
    Options options;
    options.table = "public.shop_orders";
    options.cursor = consistency == Consistency::kSnapshot ? std::vector<std::string>{"id"}
                                                           : std::vector<std::string>{"updated_at", "id"};
    options.columns = {{"order_id", "id"}, {"amount", "total"}};
    options.consistency = consistency;
    options.safety_lag = std::chrono::seconds(3);  // well above the time a run takes to start, even sanitized
    return options;
  }

  std::unique_ptr<PostgresSource> open(const Options& options,
                                       const pipeline::EntityDeclaration& entity = orders_entity()) const {
    return std::make_unique<PostgresSource>(source_.url(), options, entity, decoder_, testing::fast_retries());
  }

  pipeline::RunSummary run(const Options& options, const std::string& pipeline = "orders",
                           std::size_t batch_size = 2) {
    pipeline::RunRequest request;
    request.pipeline = pipeline;
    request.database = &target_.database();
    request.entity = orders_entity();
    request.batch_size = batch_size;
    request.retry = testing::fast_retries();
    request.open_source = [this, options] { return open(options); };
    return pipeline::run_pipeline(request);
  }

  // Waits until the source's clock is past `timestamp` + the lag, so the lag lets its row through.
  void wait_until_older_than_lag(const std::string& timestamp, std::chrono::milliseconds lag) const {
    for (int i = 0; i < 200; ++i) {
      if (source_.scalar("SELECT now() - interval '" + std::to_string(lag.count()) + " milliseconds' >= '" +
                         timestamp + "'::timestamptz") == "t") {
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "the source's clock did not pass " << timestamp;
  }

  TestDatabase target_;
  TestDatabase source_;
  file::FileRecordDecoder decoder_;
};

TEST_F(PostgresSourceTest, LoadsTheRowsThenOnlyNewOnesFromAnExactCheckpoint) {
  exec("INSERT INTO shop_orders VALUES "
       "(1, 1, 12345678901234567890.1234, '2026-03-01 12:34:56.123456+05:30', 'a', '2020-01-01 00:00:01+00'),"
       "(2, 1, 0.5, NULL, NULL, '2020-01-01 00:00:02.5+00'),"
       "(3, 4, -7, '2026-03-01 00:00:00Z', 'c', '2020-01-01 00:00:02.5+00')");
  const auto first = run(options());
  EXPECT_EQ(counts_text(first.counts), "inserted 3");
  EXPECT_EQ(first.batches, 2U);
  EXPECT_EQ(first.checkpoint, R"(["2020-01-01 00:00:02.5+00","3"])");
  EXPECT_EQ(target_.scalar("SELECT position FROM checkpoint WHERE pipeline = 'orders'"), first.checkpoint);
  // Exact: the numeric keeps every digit (a double would not), the timestamp is in UTC.
  EXPECT_EQ(query_rows(target_, "SELECT order_id, version, amount::text, "
                                "to_char(placed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), note "
                                "FROM orders ORDER BY order_id"),
            (Rows{{"1", "1", "12345678901234567890.1234", "2026-03-01 07:04:56.123456", "a"},
                  {"2", "1", "0.5000", "<null>", "<null>"},
                  {"3", "4", "-7.0000", "2026-03-01 00:00:00.000000", "c"}}));

  exec("INSERT INTO shop_orders VALUES (4, 1, 4, NULL, 'd', '2020-01-01 00:00:03+00')");
  exec("UPDATE shop_orders SET version = 2, total = 2.25, updated_at = '2020-01-01 00:00:04+00' WHERE id = 2");
  const auto second = run(options());
  EXPECT_EQ(counts_text(second.counts), "inserted 1, updated 1");
  EXPECT_EQ(second.checkpoint, R"(["2020-01-01 00:00:04+00","2"])");
  EXPECT_EQ(target_.scalar("SELECT amount::text FROM orders WHERE order_id = '2'"), "2.2500");

  const auto third = run(options());
  EXPECT_EQ(counts_text(third.counts), "none");
  EXPECT_EQ(third.checkpoint, second.checkpoint);
}

TEST_F(PostgresSourceTest, AQuarantinedRowIsItsJsonObjectAndIsReleased) {
  exec("INSERT INTO shop_orders VALUES (7, 1, 1.5, '2026-01-02 03:04:05+00', 'far too long', '2020-01-01 00:00:01+00'),"
       "(8, 1, NULL, NULL, 'ok', '2020-01-01 00:00:02+00')");
  const auto summary = run(options());
  EXPECT_EQ(counts_text(summary.counts), "inserted 1, invalid 1");
  const Rows entry = query_rows(target_, "SELECT id, raw, format, detail, position FROM quarantine");
  ASSERT_EQ(entry.size(), 1U);
  EXPECT_EQ(entry[0][1],
            R"({"order_id":"7","version":1,"amount":1.5,"placed_at":"2026-01-02T03:04:05+00:00",)"
            R"("note":"far too long","updated_at":"2020-01-01T00:00:01+00:00"})");
  EXPECT_EQ(entry[0][2], "jsonl");
  EXPECT_THAT(entry[0][3], HasSubstr("note"));
  EXPECT_EQ(entry[0][4], R"(public.shop_orders at ["2020-01-01 00:00:01+00","7"]:1 (byte 0))");

  // With a longer max_length the same raw row is valid: the release decodes it as the run did.
  testing::wait_for_no_tidemark_backends(target_.url());
  pipeline::db::Database database(target_.url());
  const auto released = pipeline::release_quarantined(database, std::stoll(entry[0][0]), {}, "tester", decoder_,
                                                       testing::fast_retries(), orders_entity(64));
  EXPECT_EQ(released.outcome, pipeline::Outcome::kInserted);
  EXPECT_EQ(query_rows(target_, "SELECT amount::text, note FROM orders WHERE order_id = '7'"),
            (Rows{{"1.5000", "far too long"}}));
}

// The late-commit trap, safety_lag: a transaction that started before a run commits after it,
// with a cursor value older than rows the run could already see.
TEST_F(PostgresSourceTest, SafetyLagLoadsARowCommittedAfterARunThatPlainKeysetWouldSkip) {
  exec("INSERT INTO shop_orders (id, version, total, updated_at) VALUES (1, 1, 1, now() - interval '1 hour')");
  auto late = source_.connect();
  pqxx::work open_transaction(*late);
  open_transaction.exec("INSERT INTO shop_orders (id, version, total) VALUES (2, 1, 2)");  // updated_at: its start
  exec("INSERT INTO shop_orders (id, version, total, updated_at) VALUES (3, 1, 3, clock_timestamp())");
  const std::string newest = source_.scalar("SELECT updated_at FROM shop_orders WHERE id = 3");

  // Without the lag (1 ms), keyset reading passes the open transaction's row and never sees it.
  Options unprotected = options();
  unprotected.safety_lag = std::chrono::milliseconds(1);
  auto plain = open(unprotected);
  std::vector<pipeline::DecodedRecord> rows;
  while (plain->read(rows, 10) > 0) {
  }
  EXPECT_EQ(rows.size(), 2U);  // ids 1 and 3

  const auto first = run(options());
  EXPECT_EQ(counts_text(first.counts), "inserted 1");  // id 1: id 3 is inside the lag
  open_transaction.commit();

  const pipeline::Position passed = plain->position();
  auto plain_again = open(unprotected);
  plain_again->seek(passed);
  rows.clear();
  EXPECT_EQ(plain_again->read(rows, 10), 0U) << "plain keyset would have skipped id 2 for ever";

  wait_until_older_than_lag(newest, options().safety_lag);
  const auto second = run(options());
  EXPECT_EQ(counts_text(second.counts), "inserted 2");
  EXPECT_EQ(target_.scalar("SELECT string_agg(order_id, ',' ORDER BY order_id) FROM orders"), "1,2,3");
}

// The late-commit trap, snapshot: the run stops before the first row not older than the
// snapshot's xmin, so its checkpoint never passes the transaction still open.
TEST_F(PostgresSourceTest, SnapshotStopsBeforeAnOpenTransactionAndLoadsItsRowOnceCommitted) {
  exec("INSERT INTO shop_orders (id, version, total) VALUES (1, 1, 1)");
  auto late = source_.connect();
  pqxx::work open_transaction(*late);
  open_transaction.exec("INSERT INTO shop_orders (id, version, total) VALUES (2, 1, 2)");
  exec("INSERT INTO shop_orders (id, version, total) VALUES (3, 1, 3)");
  // Plain keyset would read up to id 3 and store it: id 2 lies behind that checkpoint.
  EXPECT_EQ(source_.scalar("SELECT max(id) FROM shop_orders"), "3");

  const auto first = run(options(Consistency::kSnapshot));
  EXPECT_EQ(counts_text(first.counts), "inserted 1");
  EXPECT_EQ(first.checkpoint, R"(["1"])");
  open_transaction.commit();

  const auto second = run(options(Consistency::kSnapshot));
  EXPECT_EQ(counts_text(second.counts), "inserted 2");
  EXPECT_EQ(second.checkpoint, R"(["3"])");
  EXPECT_EQ(target_.scalar("SELECT string_agg(order_id, ',' ORDER BY order_id) FROM orders"), "1,2,3");
}

TEST_F(PostgresSourceTest, AnOutageOfTheSourceIsRetried) {
  exec("INSERT INTO shop_orders (id, version, total, updated_at) "
       "SELECT i, 1, i, '2020-01-01'::timestamptz + i * interval '1 s' FROM generate_series(1, 4) AS i");
  auto source = open(options());
  std::vector<pipeline::DecodedRecord> rows;
  ASSERT_EQ(source->read(rows, 2), 2U);
  EXPECT_GE(testing::terminate_tidemark_backends(source_), 1);
  EXPECT_EQ(source->read(rows, 2), 2U);
  EXPECT_EQ(stored_position(source->position()), R"(["2020-01-01 00:00:04+00","4"])");
  EXPECT_TRUE(source->precedes(pipeline::Position{R"(["2020-01-01 00:00:04+00","3"])"}, source->position()));
  EXPECT_FALSE(source->precedes(source->position(), pipeline::Position{R"(["2020-01-01 00:00:03+00","9"])"}));
}

TEST_F(PostgresSourceTest, ABatchCutByMaxBytesLeavesItsOtherRowsForTheNextRead) {
  exec("INSERT INTO shop_orders (id, version, total, updated_at) "
       "SELECT i, 1, i, '2020-01-01'::timestamptz + i * interval '1 s' FROM generate_series(1, 5) AS i");
  auto source = open(options());
  std::vector<pipeline::DecodedRecord> rows;
  std::vector<std::string> positions;
  while (source->read(rows, 3, 1) > 0) positions.push_back(stored_position(source->position()));
  ASSERT_EQ(rows.size(), 5U);  // one row a read: each passes one byte
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].fields[pipeline::kKeyField]->text, std::to_string(i + 1));
    EXPECT_EQ(positions[i], "[\"2020-01-01 00:00:0" + std::to_string(i + 1) + "+00\",\"" + std::to_string(i + 1) + "\"]");
  }
}

TEST_F(PostgresSourceTest, TheCatalogChecksNameTheKeyAtFault) {
  exec("CREATE VIEW recent_orders AS SELECT * FROM shop_orders");
  exec("CREATE TABLE loose (id bigint, version bigint NOT NULL, updated_at timestamptz NOT NULL)");
  const auto error_of = [&](const Options& options) -> std::string {
    try {
      open(options);
    } catch (const pipeline::SourceError& error) {
      return error.what();
    }
    return "";
  };
  Options view = options(Consistency::kSnapshot);
  view.table = "recent_orders";
  view.origin = "config.yaml:4: pipelines.orders.source";
  EXPECT_THAT(error_of(view), HasSubstr("config.yaml:4: pipelines.orders.source.consistency: snapshot reads tables only"));

  Options by_id = options(Consistency::kSafetyLag);
  by_id.cursor = {"id", "updated_at"};
  EXPECT_THAT(error_of(by_id), HasSubstr("source.cursor: safety_lag (the default consistency) needs a timestamp"));

  Options loose = options();
  loose.table = "loose";
  loose.cursor = {"updated_at", "version"};
  EXPECT_THAT(error_of(loose), HasSubstr("source.cursor: (updated_at, version) is not unique in loose"));
  loose.cursor = {"updated_at", "id"};
  EXPECT_THAT(error_of(loose), HasSubstr("source.cursor: column id of loose may be NULL"));

  Options missing = options();
  missing.columns = {{"amount", "total"}};
  EXPECT_THAT(error_of(missing), HasSubstr("source.columns: field order_id of entity orders has no column"));
  missing.columns = {{"order_id", "nope"}};
  EXPECT_THAT(error_of(missing), HasSubstr("source.columns.order_id: no column nope in public.shop_orders"));
  missing.columns = {{"note", "id"}, {"order_id", "version"}};
  EXPECT_THAT(error_of(missing), HasSubstr("source.columns.note: field note would come from two columns"));
  missing = options();
  missing.table = "public.nothing";
  EXPECT_THAT(error_of(missing), HasSubstr("source.table: no table or view public.nothing"));

  // A view reads with safety_lag.
  Options lagged_view = options();
  lagged_view.table = "recent_orders";
  EXPECT_EQ(error_of(lagged_view), "");
}

}  // namespace
}  // namespace tidemark::connectors::postgres
