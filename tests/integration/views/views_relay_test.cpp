// Materialized views fed by the outbox against a real PostgreSQL: batches loaded
// by run_pipeline, events delivered by the real Relay through the view sinks.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "app/wiring/options.hpp"
#include "connectors/file/file_source.hpp"
#include "metrics/metrics.hpp"
#include "pipeline/async/run_to_end.hpp"
#include "pipeline/core/validate.hpp"
#include "pipeline/relay/relay.hpp"
#include "pipeline/store/migrate.hpp"
#include "pipeline/views/view_sink.hpp"
#include "pipeline/views/views.hpp"
#include "tests/support/change_log.hpp"
#include "tests/support/change_log_store.hpp"
#include "tests/support/entity_fixtures.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::pipeline::views {
namespace {

using namespace std::chrono_literals;
using app::config::Config;
using app::config::PipelineConfig;
using app::config::RelayConfig;
using app::config::ViewDestinationOptions;
using testing::query_rows;
using testing::Rows;
using testing::TempDir;
using testing::TestDatabase;

constexpr char kPipeline[] = "views";

Config view_config() {
  Config config;
  PipelineConfig pipeline;
  pipeline.name = kPipeline;
  pipeline.destinations = {{kAccountBalance, ViewDestinationOptions{}}, {kDailyTotals, ViewDestinationOptions{}}};
  config.pipelines[kPipeline] = pipeline;
  return config;
}

relay::RelayOptions fast_options() {
  relay::RelayOptions options;
  options.config.max_attempts = 1000;
  options.config.base_delay = 1ms;
  options.config.max_delay = 10ms;
  options.config.max_in_flight = 8;
  options.lease = 5s;
  options.poll_interval = 10ms;
  options.seed = 7;
  return options;
}

// Delivers every event twice to the view sink: the first answer is discarded, as if the
// relay had died before marking it delivered.
class TwiceSink : public Sink {
 public:
  explicit TwiceSink(std::unique_ptr<Sink> inner) : inner_(std::move(inner)) {}
  boost::asio::awaitable<DeliveryResult> deliver(OutboxEvent event) override {
    boost::asio::awaitable<DeliveryResult> first = inner_->deliver(event);
    const DeliveryResult discarded = co_await std::move(first);
    (void)discarded;
    boost::asio::awaitable<DeliveryResult> second = inner_->deliver(std::move(event));
    DeliveryResult answer = co_await std::move(second);
    co_return answer;
  }

 private:
  std::unique_ptr<Sink> inner_;
};

Sinks view_sinks(const TestDatabase& db, bool twice) {
  auto sinks = app::make_view_sinks(view_config(), db.url());
  if (twice) {
    for (auto& [name, sink] : sinks) sink = std::make_unique<TwiceSink>(std::move(sink));
  }
  return sinks;
}

// Batches of revisions over a small pool of transactions and accounts: revisions move
// transactions between accounts (or to none) and between days, and some have no occurred_at.
class Workload {
 public:
  explicit Workload(std::uint64_t seed) : rng_(seed) {}

  std::string batch(int records) {
    std::ostringstream csv;
    csv << "transaction_id,source_revision,amount,account_id,occurred_at\n";
    std::uniform_int_distribution<int> key(0, 59), account(0, 8), cents(-50000, 50000), day(1, 4), hour(0, 23);
    for (int i = 0; i < records; ++i) {
      const std::string id = "tx-" + std::to_string(key(rng_));
      const int revision = ++revisions_[id];
      const int value = cents(rng_);
      csv << id << ',' << revision << ',' << (value < 0 ? "-" : "") << std::abs(value) / 100 << '.'
          << (std::abs(value) % 100 < 10 ? "0" : "") << std::abs(value) % 100 << ',';
      const int which = account(rng_);
      if (which < 8) csv << "acct-" << which;  // 8: no account (the transaction orders itself)
      csv << ',';
      if (hour(rng_) % 6 != 0) {
        const int h = hour(rng_);
        csv << "2024-01-0" << day(rng_) << 'T' << (h < 10 ? "0" : "") << h << ":30:00"
            << (h % 2 == 0 ? "+05:00" : "-03:00");
      }
      csv << '\n';
    }
    return csv.str();
  }

 private:
  std::mt19937_64 rng_;
  std::map<std::string, int> revisions_;
};

// Loads one more file into the folder source and runs the pipeline to its end.
void load(const TestDatabase& db, const TempDir& dir, int round, const std::string& csv) {
  dir.write("round_" + std::string(round < 10 ? "0" : "") + std::to_string(round) + ".csv", csv);
  auto request = testing::file_request(db, kPipeline, dir.path(), 50);
  request.destinations = {kAccountBalance, kDailyTotals};
  pipeline::run_pipeline(request);
}

// Pending events due in a random order across accounts: each key's next event (its cursor's
// head, once the log is ingested) gets a random due time. The relay still sends only that
// event of each account, so each account stays in order.
void shuffle_pending(const TestDatabase& db, double seed) {
  auto connection = db.connect();
  pqxx::work txn(*connection);
  testing::ingest(txn, {kAccountBalance, kDailyTotals});
  txn.exec("SELECT setseed(" + std::to_string(seed) + ")");
  txn.exec("UPDATE tidemark_cursor SET head_due_at = now() - random() * interval '1 hour' "
           "WHERE head_sequence IS NOT NULL AND NOT head_leased");
  txn.commit();
}

void drain(const TestDatabase& db, bool twice) {
  relay::Relay relay(db.url(), view_sinks(db, twice), fast_options());
  const auto stats = relay.drain();
  EXPECT_EQ(stats.dead, 0u);
}

// An outbox row (id, idempotency_key, partition_key, sequence, payload) as the relay hands it over.
OutboxEvent outbox_event(const std::string& destination, const std::vector<std::string>& row) {
  OutboxEvent event;
  event.id = std::stoll(row[0]);
  event.destination = destination;
  event.idempotency_key = row[1];
  event.partition_key = row[2];
  event.sequence = std::stoll(row[3]);
  event.payload = row[4];
  event.attempt = 1;
  return event;
}

Rows outbox_rows(const TestDatabase& db, const std::string& destination, const std::string& order) {
  return query_rows(db, "SELECT id, idempotency_key, partition_key, sequence, payload::text FROM outbox "
                        "WHERE destination = '" + destination + "' ORDER BY " + order);
}

// Delivers one event to a sink and waits for its answer.
DeliveryResult::Status deliver_to(Sink& sink, OutboxEvent event) {
  return async::run_to_end(sink.deliver(std::move(event))).status;
}

// The answers computed directly from transaction_state (and the view's sequences for versions).
Rows expected_balances(const TestDatabase& db) {
  return query_rows(db,
                    "SELECT COALESCE(account_id, transaction_id), sum(amount)::numeric(20,2)::text "
                    "FROM transaction_state GROUP BY 1 HAVING sum(amount) <> 0 ORDER BY 1");
}
Rows expected_versions(const TestDatabase& db) {
  return query_rows(db, "SELECT partition_key, max(sequence) FROM outbox "
                        "WHERE destination = 'account_balance' GROUP BY 1 ORDER BY 1");
}
Rows expected_days(const TestDatabase& db) {
  return query_rows(db,
                    "SELECT (COALESCE(occurred_at, updated_at) AT TIME ZONE 'UTC')::date, "
                    "sum(amount)::numeric(20,2)::text, count(*) FROM transaction_state GROUP BY 1 ORDER BY 1");
}
Rows balances(const TestDatabase& db, int version) {
  return query_rows(db, "SELECT account_id, balance::numeric(20,2)::text FROM account_balance_v" +
                            std::to_string(version) + " WHERE balance <> 0 ORDER BY 1");
}
Rows versions(const TestDatabase& db, int version) {
  return query_rows(db, "SELECT account_id, version FROM account_balance_v" + std::to_string(version) +
                            " WHERE version > 0 ORDER BY 1");
}
Rows days(const TestDatabase& db, int version) {
  return query_rows(db, "SELECT day, total::numeric(20,2)::text, events FROM daily_totals_v" +
                            std::to_string(version) + " WHERE total <> 0 OR events <> 0 ORDER BY 1");
}

// What a daily_totals version records per transaction, and what it should: each transaction's
// current revision, day and amount.
Rows counted_transactions(const TestDatabase& db, int version) {
  return query_rows(db, "SELECT transaction_id, source_revision, day, amount::numeric(20,2)::text FROM daily_totals_v" +
                            std::to_string(version) + "_transactions ORDER BY 1");
}
Rows expected_transactions(const TestDatabase& db) {
  return query_rows(db,
                    "SELECT transaction_id, source_revision, (COALESCE(occurred_at, updated_at) AT TIME ZONE 'UTC')::date, "
                    "amount::numeric(20,2)::text FROM transaction_state ORDER BY 1");
}

// Applies every daily_totals event still in the outbox to `version` once more, newest first:
// each older revision meets a newer one already counted.
void replay_daily_totals_newest_first(const TestDatabase& db, int version) {
  const auto events = outbox_rows(db, kDailyTotals, "id DESC");
  auto connection = db.connect();
  pqxx::work txn(*connection);
  for (const auto& row : events) {
    const auto event = parse_view_event(outbox_event(kDailyTotals, row));
    ASSERT_TRUE(event);
    known_view(kDailyTotals).apply(txn, table_name(kDailyTotals, version), *event, Feed::kHistory);
  }
  txn.commit();
}

void expect_views_match_state(const TestDatabase& db, int version) {
  SCOPED_TRACE("version " + std::to_string(version));
  EXPECT_FALSE(expected_balances(db).empty());
  EXPECT_EQ(balances(db, version), expected_balances(db));
  EXPECT_EQ(versions(db, version), expected_versions(db));
  EXPECT_EQ(days(db, version), expected_days(db));
  EXPECT_EQ(counted_transactions(db, version), expected_transactions(db));
}

TEST(ViewsTest, EveryEventDeliveredTwiceInRandomAccountInterleavingMatchesState) {
  const std::uint64_t seed = 20240611;
  std::cout << "seed " << seed << '\n';
  TestDatabase db;
  TempDir dir;
  Workload workload(seed);
  for (int round = 0; round < 6; ++round) {
    load(db, dir, round, workload.batch(80));
    shuffle_pending(db, 0.1 * round);
    drain(db, true);
  }
  ASSERT_EQ(db.scalar("SELECT count(*) FROM outbox WHERE status <> 'delivered'"), "0");
  expect_views_match_state(db, 1);
  // Every event once more, in another random order: nothing changes.
  {
    auto connection = db.connect();
    pqxx::work txn(*connection);
    testing::redeliver_everything(txn, kAccountBalance);
    testing::redeliver_everything(txn, kDailyTotals);
    txn.commit();
  }
  shuffle_pending(db, 0.9);
  drain(db, true);
  expect_views_match_state(db, 1);
}

TEST(ViewsTest, AccountEventAfterAGapIsRefusedAndAppliedOnceTheGapFills) {
  TestDatabase db;
  TempDir dir;
  const std::string rows[] = {"t1,1,10.00,acct-gap,2024-01-01T10:00:00Z\n", "t2,1,20.00,acct-gap,2024-01-01T11:00:00Z\n",
                              "t1,2,15.00,acct-gap,2024-01-02T10:00:00Z\n"};
  for (int round = 0; round < 3; ++round) {
    load(db, dir, round, "transaction_id,source_revision,amount,account_id,occurred_at\n" + rows[round]);
  }
  const auto events = outbox_rows(db, kAccountBalance, "sequence");
  ASSERT_EQ(events.size(), 3u);
  auto sinks = app::make_view_sinks(view_config(), db.url());
  auto& sink = *sinks.at(kAccountBalance);
  auto deliver = [&](int index) { return deliver_to(sink, outbox_event(kAccountBalance, events[index])); };
  const auto balance = [&] {
    return query_rows(db, "SELECT balance::numeric(20,2)::text, version FROM account_balance_v1");
  };
  EXPECT_EQ(deliver(0), DeliveryResult::Status::kDelivered);
  // Sequence 3 before 2: applying its delta now would be wrong later, dropping it would lose it.
  EXPECT_EQ(deliver(2), DeliveryResult::Status::kRetry);
  EXPECT_EQ(balance(), (Rows{{"10.00", "1"}}));
  EXPECT_EQ(deliver(1), DeliveryResult::Status::kDelivered);
  EXPECT_EQ(deliver(2), DeliveryResult::Status::kDelivered);
  EXPECT_EQ(balance(), (Rows{{"35.00", "3"}}));
  EXPECT_EQ(deliver(1), DeliveryResult::Status::kDelivered);  // a redelivery is dropped
  EXPECT_EQ(balance(), (Rows{{"35.00", "3"}}));
}

// tidemark_view_events_total{view, result}.
double view_events(metrics::Metrics& metrics, const std::string& view, const std::string& result) {
  return metrics.view_events_total.Add({{"view", view}, {"result", result}}).Value();
}

// "applied 2, duplicate 1, gap 0, dead 0": the series of one view, compared at once.
std::string view_event_counts(metrics::Metrics& metrics, const std::string& view) {
  std::string text;
  for (const char* result : {"applied", "duplicate", "gap", "dead"}) {
    if (!text.empty()) text += ", ";
    text += std::string(result) + " " + std::to_string(static_cast<int>(view_events(metrics, view, result)));
  }
  return text;
}

TEST(ViewsTest, ADeclaredEntitysChangeSentToAShippedViewIsDeadSayingWhatIsWrongAndWhatToDo) {
  // The config refuses a view destination on another entity (docs/entities.md), but a change
  // logged before the config changed still reaches the view. No retry makes it a change of
  // the entity the view reads: it is dead at once, counted, and the view applies the rest.
  TestDatabase db;
  TempDir dir;
  TempDir orders_dir;  // not in the folder the transactions pipeline reads
  const auto orders = testing::declare_entity(
      "orders",
      {pipeline::FieldSpec{.name = "amount", .type = pipeline::FieldType::kDecimal, .precision = 12, .scale = 2},
       pipeline::FieldSpec{.name = "customer_id", .type = pipeline::FieldType::kText}},
      {.partition_by = "customer_id"});
  const auto path = orders_dir.write("orders.csv", "order_id,version,amount,customer_id\no1,1,9.99,c9\n");
  auto request = testing::file_request(db, "orders", path, 50);
  request.entity = orders;
  request.open_source = [path, orders] {
    return connectors::file::open_file_source(
        path, connectors::file::Format::kCsv, connectors::file::kDefaultSettle,
        std::make_shared<const pipeline::RecordLayout>(pipeline::record_layout(orders)));
  };
  request.destinations = {kAccountBalance};
  pipeline::run_pipeline(request);
  load(db, dir, 0, "transaction_id,source_revision,amount,account_id,occurred_at\nt1,1,10.00,a,\n");

  metrics::Metrics metrics;
  relay::Relay relay(db.url(), app::make_view_sinks(view_config(), db.url(), &metrics), fast_options());
  EXPECT_EQ(relay.drain().dead, 1u);
  EXPECT_EQ(query_rows(db, "SELECT idempotency_key, status, last_error FROM outbox WHERE status <> 'delivered'"),
            (Rows{{"account_balance:orders:o1:1", "dead",
                   "view account_balance reads entity transaction; event account_balance:orders:o1:1 is of entity "
                   "orders: fix the config, then `tidemark outbox retry` or rebuild the view"}}));
  EXPECT_EQ(balances(db, 1), (Rows{{"a", "10.00"}}));
  EXPECT_EQ(view_event_counts(metrics, kAccountBalance), "applied 1, duplicate 0, gap 0, dead 1");
  EXPECT_EQ(view_event_counts(metrics, kDailyTotals), "applied 1, duplicate 0, gap 0, dead 0");
  auto connection = db.connect();
  EXPECT_EQ(view_health(*connection, {kAccountBalance}).at(kAccountBalance).dead, 1);
}

TEST(ViewsTest, EachEventHandedToAViewCountsOnceByWhatBecameOfItRedeliveriesAsDuplicates) {
  TestDatabase db;
  TempDir dir;
  const std::string header = "transaction_id,source_revision,amount,account_id,occurred_at\n";
  load(db, dir, 0, header + "t1,1,10.00,a,2024-01-01T10:00:00Z\n");
  load(db, dir, 1, header + "t2,1,5.00,a,2024-01-01T11:00:00Z\n");
  const auto events = outbox_rows(db, kAccountBalance, "sequence");
  ASSERT_EQ(events.size(), 2u);
  metrics::Metrics metrics;
  auto sinks = app::make_view_sinks(view_config(), db.url(), &metrics);
  // Every series exists from the start, so that the first dead event is a change from 0.
  EXPECT_NE(metrics.serialize().find(R"(tidemark_view_events_total{result="dead",view="daily_totals"} 0)"),
            std::string::npos);
  EXPECT_EQ(view_event_counts(metrics, kAccountBalance), "applied 0, duplicate 0, gap 0, dead 0");

  auto& sink = *sinks.at(kAccountBalance);
  auto deliver = [&](int index) { return deliver_to(sink, outbox_event(kAccountBalance, events[index])); };
  EXPECT_EQ(deliver(1), DeliveryResult::Status::kRetry);  // before its predecessor: a gap
  EXPECT_EQ(deliver(0), DeliveryResult::Status::kDelivered);
  EXPECT_EQ(deliver(1), DeliveryResult::Status::kDelivered);
  EXPECT_EQ(deliver(0), DeliveryResult::Status::kDelivered);  // a redelivery, dropped
  EXPECT_EQ(balances(db, 1), (Rows{{"a", "15.00"}}));
  EXPECT_EQ(view_event_counts(metrics, kAccountBalance), "applied 2, duplicate 1, gap 1, dead 0");

  // Through the relay: the whole history once, then once more, which the inbox drops.
  relay::Relay first(db.url(), app::make_view_sinks(view_config(), db.url(), &metrics), fast_options());
  EXPECT_EQ(first.drain().dead, 0u);
  EXPECT_EQ(view_event_counts(metrics, kDailyTotals), "applied 2, duplicate 0, gap 0, dead 0");
  {
    auto connection = db.connect();
    pqxx::work txn(*connection);
    testing::redeliver_everything(txn, kDailyTotals);
    txn.commit();
  }
  relay::Relay again(db.url(), app::make_view_sinks(view_config(), db.url(), &metrics), fast_options());
  EXPECT_EQ(again.drain().dead, 0u);
  EXPECT_EQ(view_event_counts(metrics, kDailyTotals), "applied 2, duplicate 2, gap 0, dead 0");
  EXPECT_EQ(days(db, 1), (Rows{{"2024-01-01", "15.00", "2"}}));
}

TEST(ViewsTest, NewVersionAfterTheOldProcessedEverythingIsComplete) {
  TestDatabase db;
  TempDir dir;
  Workload workload(99);
  for (int round = 0; round < 3; ++round) load(db, dir, round, workload.batch(80));
  drain(db, false);
  expect_views_match_state(db, 1);
  // v1's inbox records (consumer daily_totals_v1) do not mark anything done for v2.
  EXPECT_GT(rebuild_view(pipeline::db::Database(db.url()), kDailyTotals, 2, RebuildSource::kFullHistory), 0);
  EXPECT_GT(rebuild_view(pipeline::db::Database(db.url()), kAccountBalance, 2, RebuildSource::kSnapshot), 0);
  expect_views_match_state(db, 2);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM inbox WHERE consumer = 'daily_totals_v1'"),
            db.scalar("SELECT count(*) FROM inbox WHERE consumer = 'daily_totals_v2'"));
  EXPECT_THROW(rebuild_view(pipeline::db::Database(db.url()), kDailyTotals, 2, RebuildSource::kFullHistory), ViewError);

  // Cut over: retire v1; the last live version cannot be retired.
  auto connection = db.connect();
  drop_view(*connection, kDailyTotals, 1);
  EXPECT_EQ(db.scalar("SELECT to_regclass('daily_totals_v1') IS NULL"), "t");
  EXPECT_EQ(db.scalar("SELECT to_regclass('daily_totals_v1_transactions') IS NULL"), "t");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM inbox WHERE consumer = 'daily_totals_v1'"), "0");
  EXPECT_THROW(drop_view(*connection, kDailyTotals, 2), ViewError);
  load(db, dir, 3, workload.batch(80));
  drain(db, false);
  EXPECT_EQ(days(db, 2), expected_days(db));
}

TEST(ViewsTest, RebuildWhileBatchesKeepLoadingEndsEqualToTheOldVersionAndState) {
  const std::uint64_t seed = 4242;
  std::cout << "seed " << seed << '\n';
  TestDatabase db;
  TempDir dir;
  Workload workload(seed);
  load(db, dir, 0, workload.batch(80));
  relay::Relay relay(db.url(), view_sinks(db, false), fast_options());
  std::thread relaying([&] { relay.run(); });
  std::atomic<int> loaded{1};
  std::atomic<bool> rebuilt{false};
  // Loads until the rebuilds are done and three batches more, which reach v2 only live.
  std::thread loading([&] {
    for (int round = 1, after = 0; after < 3; ++round) {
      load(db, dir, round, workload.batch(60));
      loaded = round + 1;
      if (rebuilt) ++after;
    }
  });
  while (loaded < 3) std::this_thread::sleep_for(5ms);
  const int loaded_at_start = loaded;
  rebuild_view(pipeline::db::Database(db.url()), kAccountBalance, 2, RebuildSource::kSnapshot);
  rebuild_view(pipeline::db::Database(db.url()), kDailyTotals, 2, RebuildSource::kFullHistory);
  const int loaded_at_end = loaded;
  rebuilt = true;
  loading.join();
  relay.stop();
  relaying.join();
  drain(db, false);
  std::cout << "rebuilt between batches " << loaded_at_start << " and " << loaded_at_end << " of " << loaded << '\n';
  EXPECT_GE(loaded - loaded_at_end, 3);
  ASSERT_EQ(db.scalar("SELECT count(*) FROM outbox WHERE status <> 'delivered'"), "0");
  expect_views_match_state(db, 1);
  expect_views_match_state(db, 2);
  EXPECT_EQ(db.scalar("SELECT string_agg(status, ',' ORDER BY name, version) FROM views"), "live,live,live,live");
}

TEST(ViewsTest, ARebuildsReplayWaitsForALiveApplyInProgressInsteadOfInterleavingWithIt) {
  // docs/views.md: a replay transaction and the relay's applies to the view take turns, so
  // they cannot deadlock on the rows both write (which once failed rebuilds under load).
  TestDatabase db;
  TempDir dir;
  Workload workload(99);
  load(db, dir, 0, workload.batch(40));
  drain(db, false);
  std::future<std::int64_t> rebuilding;  // declared first: an early return ends `live` before waiting for it
  // A live apply in progress: the sink's first statement (receiving_versions.sql), held open.
  auto applying = db.connect();
  pqxx::work live(*applying);
  live.exec("SELECT version FROM views WHERE name = 'daily_totals' AND status <> 'retired' ORDER BY version FOR SHARE");
  rebuilding = std::async(std::launch::async, [&] {
    return rebuild_view(pipeline::db::Database(db.url()), kDailyTotals, 2, RebuildSource::kFullHistory);
  });
  // The event: the rebuild's backend waiting for a lock on its replay's first statement, or
  // the rebuild ending without having waited.
  const auto waiting = [&] {
    return db.scalar("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                     "AND query LIKE '%ORDER BY version FOR UPDATE%'") != "0";
  };
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!waiting() && rebuilding.wait_for(10ms) == std::future_status::timeout &&
         std::chrono::steady_clock::now() < deadline) {
  }
  ASSERT_TRUE(waiting()) << "the replay did not wait for the live apply in progress";
  EXPECT_EQ(db.scalar("SELECT status FROM views WHERE name = 'daily_totals' AND version = 2"), "building");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM daily_totals_v2_transactions"), "0");
  live.commit();
  EXPECT_GT(rebuilding.get(), 0);
  EXPECT_EQ(days(db, 2), days(db, 1));
  EXPECT_EQ(counted_transactions(db, 2), counted_transactions(db, 1));
}

TEST(ViewsTest, AViewReflectsThePipelinesThatListItAndAnotherWriterNeverStallsIt) {
  // docs/rules.md rule 12: `orders` feeds account_balance, `refunds` writes the same account and
  // feeds nothing. The view's stream of AC-1 has no gap, so nothing waits or goes dead.
  TestDatabase db;
  TempDir dir;
  int files = 0;
  const auto run = [&](const std::string& pipeline, const std::string& rows, std::vector<std::string> destinations) {
    const auto path = dir.write(pipeline + std::to_string(++files) + ".csv",
                                "transaction_id,source_revision,amount,account_id,occurred_at\n" + rows);
    auto request = testing::file_request(db, pipeline, path, 50);
    request.destinations = std::move(destinations);
    pipeline::run_pipeline(request);
  };
  run("orders", "o-1,1,10.00,AC-1,\n", {kAccountBalance});
  run("refunds", "r-1,1,-4.00,AC-1,\n", {});
  run("orders", "o-2,1,20.00,AC-1,\no-3,1,7.00,AC-2,\n", {kAccountBalance});
  relay::Relay relay(db.url(), app::make_view_sinks(view_config(), db.url()), fast_options());
  EXPECT_EQ(relay.drain().dead, 0u);
  EXPECT_EQ(balances(db, 1), (Rows{{"AC-1", "30.00"}, {"AC-2", "7.00"}}));
  EXPECT_EQ(versions(db, 1), (Rows{{"AC-1", "2"}, {"AC-2", "1"}}));
  auto connection = db.connect();
  const auto health = view_health(*connection, {kAccountBalance});
  EXPECT_EQ(health.at(kAccountBalance).lag_seconds, 0.0);
  EXPECT_EQ(health.at(kAccountBalance).dead, 0);

  // The state holds refunds' change, which the view never received: a snapshot would add
  // it, so the rebuild replays the view's history; with refunds feeding it too, a snapshot.
  EXPECT_EQ(rebuild_source(*connection, kAccountBalance, {"orders"}), RebuildSource::kFullHistory);
  EXPECT_EQ(rebuild_source(*connection, kAccountBalance, {"orders", "refunds"}), RebuildSource::kSnapshot);
  EXPECT_EQ(rebuild_source(*connection, kAccountBalance, {}), RebuildSource::kFullHistory);
  EXPECT_EQ(rebuild_source(*connection, kDailyTotals, {"orders", "refunds"}), RebuildSource::kFullHistory);
  rebuild_view(pipeline::db::Database(db.url()), kAccountBalance, 2, RebuildSource::kFullHistory);
  EXPECT_EQ(balances(db, 2), balances(db, 1));
  EXPECT_EQ(versions(db, 2), versions(db, 1));
}

TEST(ViewsTest, AnOldGapStallsTheLiveVersionAndARebuildFromFullHistoryOrASnapshotMendsIt) {
  // A gap from before per-destination sequences: another pipeline took number 2 of the
  // account under the one shared counter, after t1 (number 1) was delivered; the stream's
  // cursor, made from such a database, says so (its last sequence 2). The live version waits
  // for it, the event goes dead, and views show it; a rebuild applies over the gap, which can
  // never fill.
  TestDatabase db;
  TempDir dir;
  const std::string header = "transaction_id,source_revision,amount,account_id,occurred_at\n";
  load(db, dir, 0, header + "t1,1,10.00,a,\n");
  drain(db, false);
  db.scalar("UPDATE tidemark_cursor SET last_sequence = last_sequence + 1 "
            "WHERE destination = 'account_balance' RETURNING 1");
  load(db, dir, 1, header + "t2,1,5.00,a,\n");
  auto options = fast_options();
  options.config.max_attempts = 1;  // the first refusal is final, so one drain shows it
  relay::Relay relay(db.url(), app::make_view_sinks(view_config(), db.url()), options);
  EXPECT_EQ(relay.drain().dead, 1u);
  EXPECT_EQ(balances(db, 1), (Rows{{"a", "10.00"}}));
  auto connection = db.connect();
  EXPECT_EQ(view_health(*connection, {kAccountBalance}).at(kAccountBalance).dead, 1);

  rebuild_view(pipeline::db::Database(db.url()), kAccountBalance, 2, RebuildSource::kFullHistory);
  EXPECT_EQ(balances(db, 2), (Rows{{"a", "15.00"}}));
  EXPECT_EQ(versions(db, 2), (Rows{{"a", "3"}}));
  rebuild_view(pipeline::db::Database(db.url()), kAccountBalance, 3, RebuildSource::kSnapshot);
  EXPECT_EQ(balances(db, 3), (Rows{{"a", "15.00"}}));
  EXPECT_EQ(versions(db, 3), (Rows{{"a", "3"}}));
}

TEST(ViewsTest, DeadEventsShowAsLagAndDeadCountNeverAsLagZero) {
  TestDatabase db;
  TempDir dir;
  load(db, dir, 0, "transaction_id,source_revision,amount,account_id,occurred_at\nt1,1,1.00,a,\n");
  app::make_view_sinks(view_config(), db.url());  // registers version 1 of each view
  auto connection = db.connect();
  db.scalar("UPDATE tidemark_change SET created_at = now() - interval '60 seconds' RETURNING 1");
  ASSERT_EQ(testing::settle_due(*connection, kAccountBalance, testing::Settlement::kDead), 1);
  const auto health = view_health(*connection, {kAccountBalance, kDailyTotals});
  EXPECT_GE(health.at(kAccountBalance).lag_seconds, 60.0);
  EXPECT_EQ(health.at(kAccountBalance).dead, 1);
  EXPECT_EQ(health.at(kDailyTotals).dead, 0);
  const auto listed = list_views(*connection);
  const auto view = std::find_if(listed.begin(), listed.end(), [](const ViewVersion& v) { return v.name == kAccountBalance; });
  ASSERT_NE(view, listed.end());
  EXPECT_GE(view->lag_seconds, 60.0);
  EXPECT_EQ(view->pending, 0);
  EXPECT_EQ(view->dead, 1);
}

TEST(ViewsTest, CleanupRefusesAnUnsafeRetentionAndDeletesOnlyOlderRecords) {
  TestDatabase db;
  auto connection = db.connect();
  {
    pqxx::work txn(*connection);
    txn.exec("INSERT INTO inbox (consumer, event_id, processed_at) VALUES "
             "('daily_totals_v1', 'old', now() - interval '8 days'), "
             "('daily_totals_v1', 'recent', now() - interval '6 days'), "
             "('daily_totals_v1', 'new', now())");
    txn.commit();
  }
  const RelayConfig config;  // 10 attempts, 1 s base, 5 min cap
  const Redelivery relay = app::redelivery(config);
  const Duration lease = app::relay_options(config).lease;
  const Duration horizon = redelivery_horizon(relay);
  EXPECT_EQ(horizon, Duration(511'000) + 10 * lease);  // 1+2+…+256 s of backoff, one lease per attempt
  EXPECT_THROW(cleanup_inbox(*connection, horizon, relay), ViewError);
  EXPECT_THROW(cleanup_inbox(*connection, std::chrono::minutes(10), relay), ViewError);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM inbox"), "3");
  EXPECT_EQ(cleanup_inbox(*connection, std::chrono::hours(168), relay), 1);
  EXPECT_EQ(query_rows(db, "SELECT event_id FROM inbox ORDER BY event_id"), (Rows{{"new"}, {"recent"}}));
}

TEST(ViewsTest, LagIsTheAgeOfTheOldestEventNotYetApplied) {
  TestDatabase db;
  TempDir dir;
  load(db, dir, 0, "transaction_id,source_revision,amount,account_id,occurred_at\nt1,1,1.00,a,\n");
  auto connection = db.connect();
  {
    pqxx::work txn(*connection);
    txn.exec("UPDATE tidemark_change SET created_at = now() - interval '90 seconds'");
    txn.commit();
  }
  auto health = view_health(*connection, {kAccountBalance, kDailyTotals});
  EXPECT_GE(health[kAccountBalance].lag_seconds, 90.0);
  EXPECT_GE(health[kDailyTotals].lag_seconds, 90.0);
  drain(db, false);
  health = view_health(*connection, {kAccountBalance, kDailyTotals});
  EXPECT_EQ(health[kAccountBalance].lag_seconds, 0.0);
  EXPECT_EQ(health[kDailyTotals].lag_seconds, 0.0);
  EXPECT_EQ(days(db, 1).size(), 1u);  // no occurred_at: the day the event was created
}

TEST(ViewsTest, DailyTotalsRevisionMovingDayAndAmountCountsOnceWhateverTheOrder) {
  // t1 moves from account a to b, from Jan 1 to Jan 3, and its amount changes; revision 3
  // has no occurred_at (its day is its event's creation). The events sit in different
  // accounts' queues, so they may arrive in any order.
  TestDatabase db;
  TempDir dir;
  const std::string header = "transaction_id,source_revision,amount,account_id,occurred_at\n";
  load(db, dir, 0, header + "t1,1,10.00,a,2024-01-01T10:00:00Z\nt2,1,1.00,c,2024-01-01T12:00:00Z\n");
  load(db, dir, 1, header + "t1,2,25.00,b,2024-01-03T23:30:00-05:00\n");
  const auto events = outbox_rows(db, kDailyTotals, "id");
  ASSERT_EQ(events.size(), 3u);
  auto sinks = app::make_view_sinks(view_config(), db.url());
  auto& sink = *sinks.at(kDailyTotals);
  auto deliver = [&](int index) { return deliver_to(sink, outbox_event(kDailyTotals, events[index])); };
  // Revision 2 first: it counts 25.00 on Jan 4 (UTC) and nothing is taken off.
  EXPECT_EQ(deliver(2), DeliveryResult::Status::kDelivered);
  EXPECT_EQ(days(db, 1), (Rows{{"2024-01-04", "25.00", "1"}}));
  // Revision 1 late: superseded, not counted, and the delivery is acknowledged.
  EXPECT_EQ(deliver(0), DeliveryResult::Status::kDelivered);
  EXPECT_EQ(deliver(1), DeliveryResult::Status::kDelivered);
  EXPECT_EQ(days(db, 1), (Rows{{"2024-01-01", "1.00", "1"}, {"2024-01-04", "25.00", "1"}}));
  EXPECT_EQ(deliver(2), DeliveryResult::Status::kDelivered);  // a redelivery changes nothing
  EXPECT_EQ(days(db, 1), expected_days(db));
  EXPECT_EQ(counted_transactions(db, 1), expected_transactions(db));

  // Revision 3, with no occurred_at: off Jan 4, onto the day of its creation.
  load(db, dir, 2, header + "t1,3,-7.25,a,\n");
  drain(db, false);
  const std::string today = db.scalar("SELECT (created_at AT TIME ZONE 'UTC')::date FROM outbox "
                                      "WHERE idempotency_key = 'daily_totals:t1:3'");
  EXPECT_EQ(days(db, 1), (Rows{{"2024-01-01", "1.00", "1"}, {today, "-7.25", "1"}}));
  EXPECT_EQ(days(db, 1), expected_days(db));
  EXPECT_EQ(counted_transactions(db, 1), expected_transactions(db));
}

TEST(ViewsTest, DailyTotalsReplayedNewestFirstWithoutItsInboxChangesNothing) {
  // The transactions table is a dedup of its own: with the inbox emptied (as its cleanup
  // does after the retention), a replay of the whole history, newest event first, counts
  // nothing twice. A rebuild from it gives the same version.
  const std::uint64_t seed = 777;
  std::cout << "seed " << seed << '\n';
  TestDatabase db;
  TempDir dir;
  Workload workload(seed);
  for (int round = 0; round < 4; ++round) load(db, dir, round, workload.batch(80));
  drain(db, false);
  expect_views_match_state(db, 1);
  db.scalar("DELETE FROM inbox WHERE consumer = 'daily_totals_v1' RETURNING 1");
  replay_daily_totals_newest_first(db, 1);
  expect_views_match_state(db, 1);
  EXPECT_GT(rebuild_view(pipeline::db::Database(db.url()), kDailyTotals, 2, RebuildSource::kFullHistory), 0);
  EXPECT_EQ(days(db, 2), days(db, 1));
  EXPECT_EQ(counted_transactions(db, 2), counted_transactions(db, 1));
}

TEST(ViewsTest, MigrationFillsEachVersionsTransactionsFromWhatItCounted) {
  // A database as 0015 left it: daily_totals versions with their totals and inbox but no
  // transactions table. (Its outbox had outbox_destination_partition, which 0016 drops; the
  // outbox is a view since 0029, with no index to make or drop.) v1 applied everything,
  // some of its inbox rows cleaned up already; the last batch is still pending. v2 is
  // building and has applied nothing; v3 is retired (its table is gone). t9 moved accounts
  // and the previous code applied its revision 2 before its revision 1, which is pending.
  const std::uint64_t seed = 1516;
  std::cout << "seed " << seed << '\n';
  TestDatabase db;
  TempDir dir;
  Workload workload(seed);
  for (int round = 0; round < 3; ++round) load(db, dir, round, workload.batch(80));
  drain(db, false);
  load(db, dir, 3, workload.batch(80));
  const std::string header = "transaction_id,source_revision,amount,account_id,occurred_at\n";
  load(db, dir, 4, header + "t9,1,10.00,x,2025-03-01T10:00:00Z\n");
  load(db, dir, 5, header + "t9,2,30.00,y,2025-03-05T10:00:00Z\n");
  Rows counted_before = counted_transactions(db, 1);
  counted_before.push_back({"t9", "2", "2025-03-05", "30.00"});
  {
    auto connection = db.connect();
    pqxx::work txn(*connection);
    txn.exec("DROP TABLE daily_totals_v1_transactions");
    // What the previous code did with t9's revision 2 (the first event of account y): its
    // amount onto Mar 5, revision 1's off Mar 1.
    testing::mark_delivered(
        txn, kDailyTotals,
        std::stoll(txn.exec1("SELECT position FROM tidemark_change WHERE event_key = 't9:2'")[0].c_str()));
    txn.exec("INSERT INTO inbox (consumer, event_id) VALUES ('daily_totals_v1', 'daily_totals:t9:2')");
    txn.exec("INSERT INTO daily_totals_v1 (day, total, events) VALUES ('2025-03-05', 30, 1), ('2025-03-01', -10, -1)");
    txn.exec("DELETE FROM inbox WHERE consumer = 'daily_totals_v1' AND event_id IN "
             "(SELECT event_id FROM inbox WHERE consumer = 'daily_totals_v1' ORDER BY event_id LIMIT 50)");
    txn.exec("CREATE TABLE daily_totals_v2 (day date PRIMARY KEY, total numeric NOT NULL, events bigint NOT NULL)");
    txn.exec("INSERT INTO views (name, version, status, position) VALUES "
             "('daily_totals', 2, 'building', 'full history'), ('daily_totals', 3, 'retired', 'full history')");
    txn.exec("DELETE FROM schema_migrations WHERE version = '0016_daily_totals_transactions.sql'");
    txn.commit();
  }
  Rows days_after = days(db, 1);
  {
    auto connection = db.connect();
    db::migrate(*connection);
  }
  const auto sorted = [](Rows rows) {
    std::sort(rows.begin(), rows.end());
    return rows;
  };
  EXPECT_EQ(sorted(counted_transactions(db, 1)), sorted(counted_before));
  // Revision 1 of t9 is applied as the previous code would have: Mar 1 back to nothing.
  days_after.erase(std::remove(days_after.begin(), days_after.end(), std::vector<std::string>{"2025-03-01", "-10.00", "-1"}),
                   days_after.end());
  EXPECT_EQ(days(db, 1), days_after);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM inbox WHERE consumer = 'daily_totals_v1' AND event_id = 'daily_totals:t9:1'"), "1");
  EXPECT_EQ(counted_transactions(db, 2), Rows{});
  EXPECT_EQ(db.scalar("SELECT to_regclass('daily_totals_v3_transactions') IS NULL"), "t");
  // The pending batches and the building version's replay then count as if nothing happened.
  drain(db, false);
  rebuild_view(pipeline::db::Database(db.url()), kDailyTotals, 4, RebuildSource::kFullHistory);
  expect_views_match_state(db, 1);
  replay_daily_totals_newest_first(db, 2);
  EXPECT_EQ(days(db, 2), expected_days(db));
  EXPECT_EQ(counted_transactions(db, 2), expected_transactions(db));
  EXPECT_EQ(days(db, 4), expected_days(db));
}

}  // namespace
}  // namespace tidemark::pipeline::views
