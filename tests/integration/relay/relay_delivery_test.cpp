// The outbox relay against a real PostgreSQL and a real HTTP receiver on 127.0.0.1
//: at-least-once delivery with stable keys, per-account order, backoff, dead
// letters, and several relays at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <set>
#include <system_error>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include "connectors/http/signature.hpp"
#include "connectors/http/webhook_sink.hpp"
#include "metrics/metrics.hpp"
#include "pipeline/store/outbox.hpp"
#include "pipeline/relay/relay.hpp"
#include "tests/support/change_log.hpp"
#include "tests/support/test_database.hpp"
#include "tests/support/test_receiver.hpp"

namespace tidemark::pipeline::relay {
namespace {

using namespace std::chrono_literals;
using testing::Failure;
using testing::TestDatabase;
using testing::TestReceiver;

constexpr char kDestination[] = "ledger";
constexpr char kSecret[] = "whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ=";  // "tidemark-test-secret"
constexpr char kWrongSecret[] = "whsec_d3Jvbmctc2VjcmV0";         // "wrong-secret"

// Logs one event the way the commit step does (docs/delivery.md "The request"): its payload
// without 'event_id' and 'sequence', which the claim adds for the destination; returns its
// idempotency key. The key's sequence is the next of its account.
std::string insert_event(pqxx::transaction_base& txn, const std::string& transaction_id, const std::string& account,
                         const std::string& destination = kDestination) {
  boost::json::object payload{{"transaction_id", transaction_id}, {"source_revision", 1}, {"amount", "10.00"},
                              {"previous_amount", nullptr},       {"account_id", account}, {"occurred_at", nullptr}};
  testing::append_change(txn, {destination}, account, transaction_id + ":1", boost::json::serialize(payload));
  return destination + ":" + transaction_id + ":1";
}

// `destination` reads the log now, as a relay's claim does first: the keys of the events
// committed since get heads due from now, after those it read before.
void read_log(const TestDatabase& db, const std::string& destination) {
  auto connection = db.connect();
  pqxx::work txn(*connection);
  testing::ingest(txn, {destination});
  txn.commit();
}

// Makes the head of `account` due now, as if its backoff had passed.
void make_due_now(const TestDatabase& db, const std::string& account) {
  auto connection = db.connect();
  pqxx::nontransaction txn(*connection);
  testing::make_head_due(txn, kDestination, account);
}

// `count` events spread round robin over `accounts` accounts, each account's sequence from 1,
// of transactions '<transaction><i>' (one change is logged once: events of two destinations
// that are not the same changes need transactions of their own).
std::set<std::string> insert_events(const TestDatabase& db, int count, int accounts,
                                    const std::string& destination = kDestination,
                                    const std::string& transaction = "tx-") {
  auto connection = db.connect();
  pqxx::work txn(*connection);
  std::set<std::string> keys;
  for (int i = 0; i < count; ++i) {
    keys.insert(insert_event(txn, transaction + std::to_string(i), "acct-" + std::to_string(i % accounts), destination));
  }
  txn.commit();
  return keys;
}

RelayOptions fast_options(int max_attempts = 100) {
  RelayOptions options;
  options.config.max_attempts = max_attempts;
  options.config.base_delay = 1ms;
  options.config.max_delay = 20ms;
  options.config.max_in_flight = 8;
  options.config.connect_timeout = 1s;
  options.config.request_timeout = 300ms;
  options.lease = 3s;
  options.poll_interval = 20ms;
  options.seed = 42;
  return options;
}

std::unique_ptr<Sink> webhook_sink(const TestReceiver& receiver, const RelayOptions& options,
                                   const std::string& secret = kSecret) {
  connectors::http::WebhookOptions webhook;
  webhook.url = receiver.url();
  webhook.signing_key = *connectors::http::decode_secret(secret);
  webhook.connect_timeout = options.config.connect_timeout;
  webhook.request_timeout = options.config.request_timeout;
  return std::make_unique<connectors::http::WebhookSink>(webhook);
}

Sinks sinks_for(const TestReceiver& receiver, const RelayOptions& options, const std::string& secret = kSecret) {
  Sinks sinks;
  sinks.emplace(kDestination, webhook_sink(receiver, options, secret));
  return sinks;
}

std::string pending_count(const TestDatabase& db) {
  return db.scalar("SELECT count(*) FROM outbox WHERE status = 'pending'");
}

// Retries come due after their backoff, so `--once` is repeated until nothing is pending.
void drain_until_settled(Relay& relay, const TestDatabase& db, std::chrono::seconds limit = 90s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (pending_count(db) != "0") {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "events still pending: " << pending_count(db);
    relay.drain();
    std::this_thread::sleep_for(5ms);
  }
}

struct EventInfo {
  std::string account;
  std::int64_t sequence = 0;
};

EventInfo parse(const std::string& body) {
  const auto json = boost::json::parse(body).as_object();
  return {std::string(json.at("account_id").as_string()), json.at("sequence").as_int64()};
}

std::set<std::string> outbox_keys(const TestDatabase& db) {
  auto connection = db.connect();
  pqxx::read_transaction txn(*connection);
  std::set<std::string> keys;
  for (const auto& row : txn.exec("SELECT idempotency_key FROM outbox")) keys.insert(row[0].as<std::string>());
  return keys;
}

std::map<std::string, std::string> outbox_bodies(const TestDatabase& db) {
  auto connection = db.connect();
  pqxx::read_transaction txn(*connection);
  std::map<std::string, std::string> bodies;
  for (const auto& row : txn.exec("SELECT idempotency_key, payload::text FROM outbox")) {
    bodies[row[0].as<std::string>()] = row[1].as<std::string>();
  }
  return bodies;
}

// Every request carries the row's key in both headers and its exact body; per account, the
// requests (repeats included) arrive in sequence order, and each event is applied once.
void expect_well_formed_and_ordered(const TestReceiver& receiver, const TestDatabase& db) {
  const auto bodies = outbox_bodies(db);
  std::map<std::string, std::int64_t> last_sequence;
  for (const auto& request : receiver.requests()) {
    EXPECT_TRUE(request.signature_valid) << request.webhook_id;
    EXPECT_EQ(request.idempotency_key, request.webhook_id);
    EXPECT_EQ(request.content_type, "application/json");
    ASSERT_TRUE(bodies.count(request.webhook_id)) << request.webhook_id;
    EXPECT_EQ(request.body, bodies.at(request.webhook_id)) << "a repeat must carry the same body";
    const auto event = parse(request.body);
    EXPECT_GE(event.sequence, last_sequence[event.account])
        << request.webhook_id << " arrived after a later event of " << event.account;
    last_sequence[event.account] = event.sequence;
  }
  std::map<std::string, std::int64_t> last_applied;
  for (const auto& body : receiver.applied_bodies()) {
    const auto event = parse(body);
    EXPECT_EQ(event.sequence, last_applied[event.account] + 1) << "account " << event.account << " applied out of order";
    last_applied[event.account] = event.sequence;
  }
}

// last_error of every row, in id order.
std::vector<std::string> query_errors(const TestDatabase& db) {
  auto connection = db.connect();
  pqxx::read_transaction txn(*connection);
  std::vector<std::string> errors;
  for (const auto& row : txn.exec("SELECT last_error FROM outbox ORDER BY id")) {
    errors.push_back(row[0].as<std::string>());
  }
  return errors;
}

std::set<std::string> applied_keys(const TestReceiver& receiver) {
  std::set<std::string> keys;
  for (const auto& request : receiver.requests()) {
    if (request.applied) keys.insert(request.webhook_id);
  }
  return keys;
}

TEST(Relay, EveryEventArrivesOnceInOrderDespiteThirtyPercentRandomFailures) {
  constexpr std::uint64_t kSeed = 20240601;
  std::cout << "receiver failure seed " << kSeed << "\n";
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.set_retry_after_seconds(0);
  receiver.set_slow_delay(600ms);
  receiver.fail_randomly(0.3, kSeed,
                         {Failure::kServerError, Failure::kTooManyRequests, Failure::kDrop, Failure::kSlow});
  const auto keys = insert_events(db, 300, 25);
  const auto options = fast_options();
  Relay relay(db.url(), sinks_for(receiver, options), options);

  drain_until_settled(relay, db);

  EXPECT_EQ(db.scalar("SELECT count(*) FROM outbox WHERE status = 'delivered' AND delivered_at IS NOT NULL"), "300");
  EXPECT_EQ(outbox_keys(db), keys);
  EXPECT_EQ(applied_keys(receiver), outbox_keys(db));
  EXPECT_EQ(receiver.applied_count(), keys.size());
  EXPECT_GT(receiver.requests().size(), keys.size()) << "the failures must have caused repeats";
  expect_well_formed_and_ordered(receiver, db);
}

TEST(Relay, EventCommittedLateWithALowerIdIsStillDelivered) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  const auto options = fast_options();
  Relay relay(db.url(), sinks_for(receiver, options), options);

  // A takes the lower id but commits after B, and after the relay has delivered B. The
  // destination is registered before, or B would wait for A's registration of it.
  auto connection_a = db.connect();
  auto connection_b = db.connect();
  {
    pqxx::work txn(*connection_a);
    testing::register_destinations(txn, {kDestination});
    txn.commit();
  }
  pqxx::work txn_a(*connection_a);
  const auto key_a = insert_event(txn_a, "tx-a", "acct-a");
  pqxx::work txn_b(*connection_b);
  const auto key_b = insert_event(txn_b, "tx-b", "acct-b");
  txn_b.commit();
  relay.drain();
  ASSERT_EQ(applied_keys(receiver), std::set<std::string>{key_b});
  txn_a.commit();
  relay.drain();

  EXPECT_EQ(applied_keys(receiver), (std::set<std::string>{key_a, key_b}));
  EXPECT_LT(std::stoll(db.scalar("SELECT id FROM outbox WHERE idempotency_key = 'ledger:tx-a:1'")),
            std::stoll(db.scalar("SELECT id FROM outbox WHERE idempotency_key = 'ledger:tx-b:1'")));
  EXPECT_EQ(pending_count(db), "0");
}

TEST(Relay, LaterEventOfAnAccountWaitsWhileAnEarlierOneIsPending) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.fail_next(Failure::kServerError);
  auto options = fast_options();
  options.config.base_delay = 1h;  // the failed first event waits, holding back the second
  options.config.max_delay = 1h;
  insert_events(db, 2, 1);
  Relay relay(db.url(), sinks_for(receiver, options), options);

  relay.drain();
  ASSERT_EQ(receiver.requests().size(), 1u);
  EXPECT_EQ(parse(receiver.requests()[0].body).sequence, 1);
  EXPECT_EQ(db.scalar("SELECT attempts FROM outbox WHERE sequence = 2"), "0");

  // Once the first is due again, both go, in order.
  make_due_now(db, "acct-0");
  relay.drain();
  relay.drain();
  EXPECT_EQ(pending_count(db), "0");
  expect_well_formed_and_ordered(receiver, db);
  EXPECT_EQ(receiver.applied_count(), 2u);
}

TEST(Relay, BadRequestIsDeadAfterOneAttemptAndRetryRedrivesIt) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.fail_next(Failure::kBadRequest);
  const auto keys = insert_events(db, 1, 1);
  const auto options = fast_options();
  Relay relay(db.url(), sinks_for(receiver, options), options);

  relay.drain();
  EXPECT_EQ(db.scalar("SELECT status || ' ' || attempts FROM outbox"), "dead 1");
  EXPECT_EQ(db.scalar("SELECT last_error FROM outbox"), "HTTP 400: rejected");
  EXPECT_EQ(receiver.applied_count(), 0u);
  relay.drain();
  EXPECT_EQ(receiver.requests().size(), 1u) << "a dead event is not sent again by itself";

  auto connection = db.connect();
  const auto id = std::stoll(db.scalar("SELECT id FROM outbox"));
  ASSERT_TRUE(retry_outbox_event(*connection, id));
  relay.drain();
  EXPECT_EQ(db.scalar("SELECT status || ' ' || attempts FROM outbox"), "delivered 1");
  EXPECT_EQ(applied_keys(receiver), keys);
  EXPECT_FALSE(retry_outbox_event(*connection, id)) << "a delivered event is not re-driven";
}

TEST(Relay, MaxAttemptsIsHonoured) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.fail_always(Failure::kServerError);
  insert_events(db, 1, 1);
  const auto options = fast_options(/*max_attempts=*/3);
  Relay relay(db.url(), sinks_for(receiver, options), options);

  drain_until_settled(relay, db);

  EXPECT_EQ(db.scalar("SELECT status || ' ' || attempts FROM outbox"), "dead 3");
  EXPECT_EQ(receiver.requests().size(), 3u);
  EXPECT_NE(db.scalar("SELECT last_error FROM outbox").find("HTTP 500"), std::string::npos);
}

TEST(Relay, RetryAfterOfTheDestinationIsHonoured) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.set_retry_after_seconds(30);
  receiver.fail_next(Failure::kTooManyRequests);
  insert_events(db, 1, 1);
  const auto options = fast_options();
  Relay relay(db.url(), sinks_for(receiver, options), options);

  relay.drain();

  EXPECT_EQ(db.scalar("SELECT status || ' ' || attempts FROM outbox"), "pending 1");
  const double wait = std::stod(db.scalar("SELECT extract(epoch FROM next_attempt_at - now()) FROM outbox"));
  EXPECT_GT(wait, 25);
  EXPECT_LE(wait, 30.5);
}

TEST(Relay, TimedOutAnswerIsRetriedAndTheReceiverAppliesItOnce) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.set_slow_delay(1500ms);
  receiver.fail_next(Failure::kSlow);
  const auto keys = insert_events(db, 1, 1);
  auto options = fast_options();
  options.config.base_delay = 1h;  // so that the first drain stops after the timed-out attempt
  options.config.max_delay = 1h;
  Relay relay(db.url(), sinks_for(receiver, options), options);

  relay.drain();
  EXPECT_EQ(db.scalar("SELECT status || ' ' || attempts FROM outbox"), "pending 1");
  EXPECT_NE(db.scalar("SELECT last_error FROM outbox").find("timed out"), std::string::npos)
      << db.scalar("SELECT last_error FROM outbox");

  make_due_now(db, "acct-0");
  relay.drain();
  EXPECT_EQ(db.scalar("SELECT status || ' ' || attempts FROM outbox"), "delivered 2");
  EXPECT_EQ(receiver.requests().size(), 2u);
  EXPECT_EQ(applied_keys(receiver), keys);
  EXPECT_EQ(receiver.applied_count(), 1u);
}

TEST(Relay, DroppedConnectionIsRetried) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.fail_next(Failure::kDrop, 2);
  const auto keys = insert_events(db, 1, 1);
  const auto options = fast_options();
  Relay relay(db.url(), sinks_for(receiver, options), options);

  drain_until_settled(relay, db);

  EXPECT_EQ(db.scalar("SELECT status || ' ' || attempts FROM outbox"), "delivered 3");
  EXPECT_EQ(applied_keys(receiver), keys);
}

TEST(Relay, WrongSigningSecretIsRejectedByTheReceiver) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  insert_events(db, 1, 1);
  const auto options = fast_options();
  Relay relay(db.url(), sinks_for(receiver, options, kWrongSecret), options);

  relay.drain();

  ASSERT_EQ(receiver.requests().size(), 1u);
  EXPECT_FALSE(receiver.requests()[0].signature_valid);
  EXPECT_EQ(receiver.applied_count(), 0u);
  EXPECT_EQ(db.scalar("SELECT status || ' ' || attempts FROM outbox"), "dead 1");
  EXPECT_NE(db.scalar("SELECT last_error FROM outbox").find("HTTP 401"), std::string::npos);
}

TEST(Relay, TwoRelaysAtOnceNeverHaveAnEventInFlightTwiceAndLoseNothing) {
  constexpr std::uint64_t kSeed = 7;
  std::cout << "receiver failure seed " << kSeed << "\n";
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.set_retry_after_seconds(0);
  receiver.fail_randomly(0.2, kSeed, {Failure::kServerError, Failure::kTooManyRequests});
  const auto keys = insert_events(db, 400, 40);
  auto options = fast_options();
  options.config.max_in_flight = 4;
  Relay first(db.url(), sinks_for(receiver, options), options);
  options.seed = 43;
  Relay second(db.url(), sinks_for(receiver, options), options);

  RelayStats first_stats;
  RelayStats second_stats;
  std::thread first_thread([&] { first_stats = first.run(); });
  std::thread second_thread([&] { second_stats = second.run(); });
  const bool all_applied = receiver.wait_for_applied(keys.size(), 90s);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (pending_count(db) != "0" && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  first.stop();
  second.stop();
  first_thread.join();
  second_thread.join();

  ASSERT_TRUE(all_applied);
  EXPECT_EQ(pending_count(db), "0");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM outbox WHERE status = 'delivered'"), "400");
  EXPECT_EQ(receiver.max_concurrent_per_id(), 1);
  EXPECT_EQ(applied_keys(receiver), keys);
  EXPECT_EQ(first_stats.delivered + second_stats.delivered, 400u);
  EXPECT_GT(first_stats.delivered, 0u) << "one relay must not starve the other";
  EXPECT_GT(second_stats.delivered, 0u) << "one relay must not starve the other";
  // Each event was acknowledged exactly once: no two relays sent it successfully.
  std::map<std::string, int> acknowledged;
  for (const auto& request : receiver.requests()) {
    if (request.failure == Failure::kNone) ++acknowledged[request.webhook_id];
  }
  for (const auto& [key, count] : acknowledged) EXPECT_EQ(count, 1) << key;
  expect_well_formed_and_ordered(receiver, db);
}

// A destination's own window: a destination that does not answer holds at most
// its window of the relay's places, and the other destination's events all go meanwhile.
// Without it the silent destination's events, due first, take every place and keep them.
TEST(Relay, ASilentDestinationHoldsOnlyItsOwnWindowWhileTheOtherDelivers) {
  TestDatabase db;
  TestReceiver fast(kSecret);
  TestReceiver silent(kSecret);
  silent.hold();
  // The silent destination's events are due first: a claim in due order takes them first.
  const auto silent_keys = insert_events(db, 30, 30, "silent", "silent-");
  read_log(db, "silent");
  const auto fast_keys = insert_events(db, 30, 30, "fast", "fast-");
  read_log(db, "fast");
  auto options = fast_options();
  options.config.max_in_flight = 6;
  options.config.request_timeout = 60s;  // held requests are not timed out meanwhile
  options.lease = 120s;
  options.windows = {{"silent", 2}};
  Sinks sinks;
  sinks.emplace("fast", webhook_sink(fast, options));
  sinks.emplace("silent", webhook_sink(silent, options));
  Relay relay(db.url(), std::move(sinks), options);
  std::thread thread([&] { relay.run(); });

  const bool fast_done = fast.wait_for_applied(fast_keys.size(), 30s);
  const bool silent_full = silent.wait_for_held(2, 60s);
  const int held_while_fast_went = silent.max_held();
  silent.release();
  const bool silent_done = silent.wait_for_applied(silent_keys.size(), 60s);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (pending_count(db) != "0" && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  relay.stop();
  thread.join();

  EXPECT_TRUE(fast_done) << "the silent destination held the places of the other";
  EXPECT_TRUE(silent_full);
  EXPECT_EQ(held_while_fast_went, 2);
  EXPECT_TRUE(silent_done);
  EXPECT_EQ(pending_count(db), "0");
  EXPECT_EQ(applied_keys(fast), fast_keys);
  EXPECT_EQ(applied_keys(silent), silent_keys);

  // relay --once ends when both are drained, the capped one claimed within its window.
  {
    auto connection = db.connect();
    pqxx::work txn(*connection);
    for (const char* destination : {"fast", "silent"}) {
      for (int i = 0; i < 40; ++i) {
        insert_event(txn, std::string("more-") + destination + std::to_string(i), "acct-" + std::to_string(i % 7),
                     destination);
      }
    }
    txn.commit();
  }
  Sinks again;
  again.emplace("fast", webhook_sink(fast, options));
  again.emplace("silent", webhook_sink(silent, options));
  Relay once(db.url(), std::move(again), options);
  const auto stats = once.drain();
  EXPECT_EQ(stats.delivered, 80u);
  EXPECT_EQ(pending_count(db), "0");
}

// While the relay's window is full, a place that frees goes to the next destination in turn
// that has an event queued, not always to the first by name. One receiver serves both
// destinations and answers one held request at a time; the events are due alternately.
TEST(Relay, AFreedPlaceOfTheSharedWindowGoesToTheDestinationsInTurn) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.hold();
  {
    auto connection = db.connect();
    for (int i = 1; i <= 4; ++i) {
      for (const std::string destination : {"alpha", "beta"}) {
        pqxx::work txn(*connection);  // one transaction and one read each: due one after the other
        insert_event(txn, destination.substr(0, 1) + std::to_string(i), destination + std::to_string(i), destination);
        txn.commit();
        read_log(db, destination);
      }
    }
  }
  auto options = fast_options();
  options.config.max_in_flight = 2;
  options.config.request_timeout = 60s;
  options.lease = 120s;
  Sinks sinks;
  sinks.emplace("alpha", webhook_sink(receiver, options));
  sinks.emplace("beta", webhook_sink(receiver, options));
  Relay relay(db.url(), std::move(sinks), options);
  std::thread thread([&] { relay.run(); });
  const auto arrived = [&] {
    std::vector<std::string> ids;
    for (const auto& request : receiver.requests()) ids.push_back(request.webhook_id);
    return ids;
  };
  // The claim after an answer took it: an event in flight counts its attempt (none failed here).
  const auto leased = [&](const std::string& key) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (db.scalar("SELECT count(*) FROM outbox WHERE partition_key = '" + key +
                     "' AND status = 'pending' AND attempts = 1") != "1") {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(10ms);
    }
    return true;
  };

  // The first claim takes a1 b1 a2 b2 (the window and one window ahead, by due time); the
  // window sends a1 and b1.
  const bool first_two = receiver.wait_for_held(2, 30s);
  receiver.release_one("alpha:a1:1");  // beta was served last: alpha's a2 goes
  const bool third = receiver.wait_for_requests(3, 30s) && leased("alpha3");
  // alpha was served last and has a3 queued too: beta's b2 goes.
  receiver.release_one("alpha:a2:1");
  const bool fourth = receiver.wait_for_requests(4, 30s);
  const auto order = arrived();
  receiver.release();
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (pending_count(db) != "0" && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  relay.stop();
  thread.join();

  EXPECT_TRUE(first_two && third && fourth);
  ASSERT_GE(order.size(), 4u);
  // a1 and b1 go at once, on two connections: either may arrive first.
  EXPECT_EQ(std::set<std::string>(order.begin(), order.begin() + 2), (std::set<std::string>{"alpha:a1:1", "beta:b1:1"}));
  EXPECT_EQ(order[2], "alpha:a2:1");
  EXPECT_EQ(order[3], "beta:b2:1") << "the freed place went to alpha again";
  EXPECT_EQ(pending_count(db), "0");
}

TEST(Relay, CountsDeliveriesAndPendingEventsInMetrics) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.fail_next(Failure::kServerError);
  insert_events(db, 2, 2);
  auto options = fast_options();
  options.config.base_delay = 1h;
  options.config.max_delay = 1h;
  metrics::Metrics metrics;
  Relay relay(db.url(), sinks_for(receiver, options), options, &metrics);

  relay.drain();

  const std::string text = metrics.serialize();
  EXPECT_NE(text.find(R"(tidemark_outbox_deliveries_total{destination="ledger",result="delivered"} 1)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(tidemark_outbox_deliveries_total{destination="ledger",result="retry"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(tidemark_outbox_pending{destination="ledger"} 1)"), std::string::npos);
  EXPECT_NE(text.find(R"(tidemark_outbox_delivery_duration_seconds_count{destination="ledger"} 2)"),
            std::string::npos);
}

TEST(Relay, DeliveryCountersOfEveryDestinationStartAtZero) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  const auto options = fast_options();
  metrics::Metrics metrics;
  Relay relay(db.url(), sinks_for(receiver, options), options, &metrics);

  // Before any delivery: the first dead event must be an increase from 0, not a new series.
  const std::string text = metrics.serialize();
  for (const char* result : {"delivered", "retry", "dead"}) {
    EXPECT_NE(text.find(std::string(R"(tidemark_outbox_deliveries_total{destination="ledger",result=")") + result +
                        "\"} 0"),
              std::string::npos)
        << result << "\n"
        << text;
  }
  EXPECT_NE(text.find(R"(tidemark_outbox_delivery_duration_seconds_count{destination="ledger"} 0)"), std::string::npos);
}

// A 500 whose body is not ASCII, cut by the excerpt in the middle of a character, plus NUL
// and stray bytes: last_error is stored as valid UTF-8 and the relay carries on.
TEST(Relay, ErrorBodyCutMidCharacterIsStoredAsValidBoundedText) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  std::string body(199, 'x');
  for (int i = 0; i < 2000; ++i) body += "\xC3\xA9";  // é, cut after its first byte at 200
  receiver.set_body(Failure::kServerError, body);
  receiver.fail_next(Failure::kServerError);
  receiver.set_body(Failure::kBadRequest, std::string("bad\0byte \xFF\xC3", 11));
  receiver.fail_next(Failure::kBadRequest);
  insert_events(db, 2, 2);
  auto options = fast_options();
  options.config.base_delay = 1h;
  options.config.max_delay = 1h;
  Relay relay(db.url(), sinks_for(receiver, options), options);

  ASSERT_NO_THROW(relay.drain());

  auto errors = query_errors(db);
  std::sort(errors.begin(), errors.end());  // the two went at once, in either order
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[1], "HTTP 500: " + std::string(197, 'x') + "\xE2\x80\xA6");
  EXPECT_EQ(errors[0], "HTTP 400: bad\xEF\xBF\xBD" "byte \xEF\xBF\xBD\xEF\xBF\xBD");
}

// Retry-After beyond what any integer holds, or beyond duration_cast's range, is capped at
// an hour; without the cap it overflowed the interval or was ignored.
TEST(Relay, HugeRetryAfterIsCappedAtAnHour) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  const auto options = fast_options();
  Relay relay(db.url(), sinks_for(receiver, options), options);
  int number = 0;
  for (const std::string value : {"10000000000000", "9223372036854775807", "99999999999999999999999"}) {
    SCOPED_TRACE(value);
    {
      auto connection = db.connect();
      pqxx::work txn(*connection);
      insert_event(txn, "tx-" + std::to_string(number), "acct-" + std::to_string(number));
      txn.commit();
    }
    receiver.set_retry_after(value);
    receiver.fail_next(Failure::kTooManyRequests);
    ASSERT_NO_THROW(relay.drain());
    const std::string key = std::string(kDestination) + ":tx-" + std::to_string(number) + ":1";
    EXPECT_EQ(db.scalar("SELECT status || ' ' || attempts FROM outbox WHERE idempotency_key = '" + key + "'"),
              "pending 1");
    const double wait = std::stod(db.scalar("SELECT extract(epoch FROM next_attempt_at - now()) FROM outbox "
                                            "WHERE idempotency_key = '" + key + "'"));
    EXPECT_GT(wait, 3590);
    EXPECT_LE(wait, 3600.5);
    ++number;
  }
}

TEST(Relay, TwoHundredWithAMegabyteBodyIsDelivered) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.set_body(Failure::kNone, std::string(1 << 20, 'a'));
  const auto keys = insert_events(db, 3, 1);
  const auto options = fast_options(/*max_attempts=*/1);
  Relay relay(db.url(), sinks_for(receiver, options), options);

  relay.drain();

  EXPECT_EQ(db.scalar("SELECT string_agg(status || ' ' || attempts, ',') FROM outbox"),
            "delivered 1,delivered 1,delivered 1");
  EXPECT_EQ(applied_keys(receiver), keys);
}

// A destination that answers 200 and then streams a chunked body without
// end held the attempt far past request_timeout (Beast's timer lost its race with a read
// that always had data). request_timeout covers the whole exchange, the body is read up to
// a small cap and dropped with the connection, and the 2xx is the answer: delivered. The
// stream stops only when the client hangs up (or after 20 s, far past any bound asserted).
TEST(Relay, AnEndlessTwoHundredBodyEndsTheAttemptWithinTheRequestTimeout) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.set_slow_delay(20s);
  receiver.fail_next(Failure::kEndlessBody);
  const auto keys = insert_events(db, 2, 1);  // the key's second event waits for the first
  auto options = fast_options(/*max_attempts=*/1);
  options.config.request_timeout = 2s;
  options.lease = 30s;
  Relay relay(db.url(), sinks_for(receiver, options), options);

  const auto started = std::chrono::steady_clock::now();
  relay.drain();
  const auto took = std::chrono::steady_clock::now() - started;
  std::cout << "drain took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms\n";

  // Loose: the bound is request_timeout plus the claims and marks around it.
  EXPECT_LT(took, options.config.request_timeout + 3s)
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  ASSERT_TRUE(receiver.endless_body_ended().has_value()) << "the client never hung up";
  EXPECT_LT(*receiver.endless_body_ended() - started, options.config.request_timeout + 3s);
  EXPECT_EQ(db.scalar("SELECT string_agg(status || ' ' || attempts, ',' ORDER BY sequence) FROM outbox"),
            "delivered 1,delivered 1");
  EXPECT_EQ(applied_keys(receiver), keys);
  EXPECT_EQ(receiver.requests().size(), 2u);
}

// The same, with a body that trickles in (a chunk every 50 ms, never reaching the cap): the
// deadline, not the cap, ends the exchange, and the 2xx is still the answer.
TEST(Relay, ATricklingTwoHundredBodyEndsTheAttemptAtTheRequestTimeout) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.set_slow_delay(20s);
  receiver.set_endless_chunk_interval(50ms);
  receiver.fail_next(Failure::kEndlessBody);
  const auto keys = insert_events(db, 1, 1);
  auto options = fast_options(/*max_attempts=*/1);
  options.config.request_timeout = 1s;
  options.lease = 30s;
  Relay relay(db.url(), sinks_for(receiver, options), options);

  const auto started = std::chrono::steady_clock::now();
  relay.drain();
  const auto took = std::chrono::steady_clock::now() - started;

  EXPECT_GE(took, options.config.request_timeout - 100ms) << "the body was read until the deadline";
  EXPECT_LT(took, options.config.request_timeout + 3s)
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  EXPECT_EQ(db.scalar("SELECT status || ' ' || attempts FROM outbox"), "delivered 1");
  EXPECT_EQ(applied_keys(receiver), keys);
}

// An attempt that outlasts the lease (the receiver holds the request for
// 2.5 leases, within request_timeout) was sent again on a new connection when the lease ran
// out, while the first was still in flight. The relay renews the leases of its attempts in
// flight, so the event goes once and is delivered by that attempt.
TEST(Relay, AnAttemptThatOutlastsTheLeaseIsNotSentAgainWhileInFlight) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.set_slow_delay(2500ms);
  receiver.fail_next(Failure::kSlow);
  const auto keys = insert_events(db, 2, 1);
  auto options = fast_options();
  options.config.request_timeout = 10s;
  options.lease = 1s;
  Relay relay(db.url(), sinks_for(receiver, options), options);

  relay.drain();

  EXPECT_EQ(receiver.max_concurrent_per_id(), 1);
  EXPECT_EQ(receiver.requests().size(), 2u) << "each event is sent once";
  EXPECT_EQ(db.scalar("SELECT string_agg(status || ' ' || attempts, ',' ORDER BY sequence) FROM outbox"),
            "delivered 1,delivered 1");
  EXPECT_EQ(applied_keys(receiver), keys);
}

// The cluster is stopped (as a crash would) while a delivery is in flight; its 2xx arrives
// during the outage. run() waits the outage out instead of ending, and records that answer
// when the database is back: the event is not sent again.
TEST(Relay, RunWaitsOutADatabaseOutageAndRecordsTheAnswersOfMeanwhile) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.set_slow_delay(1500ms);
  receiver.fail_next(Failure::kSlow);
  insert_events(db, 1, 1);
  auto options = fast_options();
  options.config.request_timeout = 10s;
  options.lease = 60s;
  // One round of retries lasts well under a second, so the outage spans many rounds.
  options.database_retries = {.max_attempts = 3, .base_delay = 10ms, .max_delay = 50ms};
  Relay relay(db.url(), sinks_for(receiver, options), options);

  std::atomic<bool> ended{false};
  std::string failure;
  RelayStats stats;
  std::thread runner([&] {
    try {
      stats = relay.run();
    } catch (const std::exception& error) {
      failure = error.what();
    }
    ended = true;
  });
  struct JoinRunner {
    Relay& relay;
    std::thread& thread;
    ~JoinRunner() {
      relay.stop();
      if (thread.joinable()) thread.join();
    }
  } join_runner{relay, runner};

  ASSERT_TRUE(receiver.wait_for_applied(1, 10s));  // applied; the answer comes 1.5 s later
  TestDatabase::crash_cluster();
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!relay.waiting_for_database() && !ended && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(relay.waiting_for_database());
  std::this_thread::sleep_for(2s);  // the outage outlasts the answer and many retry rounds
  EXPECT_FALSE(ended) << "run() ended during the outage: " << failure;
  TestDatabase::restart_cluster();

  while (db.scalar("SELECT status FROM outbox") != "delivered" && std::chrono::steady_clock::now() < deadline + 20s) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(db.scalar("SELECT status || ' ' || attempts FROM outbox"), "delivered 1");
  EXPECT_FALSE(relay.waiting_for_database());
  EXPECT_FALSE(ended) << failure;
  relay.stop();
  runner.join();
  EXPECT_EQ(failure, "");
  EXPECT_EQ(stats.delivered, 1u);
  EXPECT_EQ(receiver.requests().size(), 1u) << "the answer of the outage was lost and the event sent again";
}

TEST(Relay, DrainGivesUpOnADatabaseOutageAfterOneRoundOfRetries) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  insert_events(db, 1, 1);
  auto options = fast_options();
  options.database_retries = {.max_attempts = 3, .base_delay = 10ms, .max_delay = 50ms};
  Relay relay(db.url(), sinks_for(receiver, options), options);

  TestDatabase::crash_cluster();
  EXPECT_THROW(relay.drain(), db::RetriesExhausted);
  TestDatabase::restart_cluster();
  relay.drain();
  EXPECT_EQ(db.scalar("SELECT status || ' ' || attempts FROM outbox"), "delivered 1");
}

// Keys whose bytes a receiver may decode differently (docs/delivery.md "The request"): the headers
// carry the key percent-encoded to printable ASCII, the same on every attempt, so a receiver
// that reads headers as Latin-1 (Python's http.server) verifies every event. Before, the raw
// bytes went out and such a receiver answered 401: dead at once.
TEST(Relay, HeaderIdsArePrintableAsciiSoALatin1ReceiverVerifiesEveryEvent) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.read_headers_as_latin1();
  const std::vector<std::string> transaction_ids = {"tx-\xC3\xA9\xC3\xA8-\xF0\x9F\x98\x80", "tx with spaces", "tx<1>",
                                                    "tx-100%", "tx-plain", "tx-\x01\x7F"};
  std::set<std::string> keys;
  {
    auto connection = db.connect();
    pqxx::work txn(*connection);
    for (std::size_t i = 0; i < transaction_ids.size(); ++i) {
      keys.insert(insert_event(txn, transaction_ids[i], "acct-" + std::to_string(i)));
    }
    txn.commit();
  }
  receiver.fail_next(Failure::kServerError, static_cast<int>(keys.size()));  // so that each goes twice
  const auto options = fast_options();
  Relay relay(db.url(), sinks_for(receiver, options), options);

  drain_until_settled(relay, db);

  EXPECT_EQ(db.scalar("SELECT count(*) FROM outbox WHERE status = 'delivered'"), std::to_string(keys.size()));
  std::map<std::string, std::set<std::string>> ids_of_key;
  for (const auto& request : receiver.requests()) {
    EXPECT_TRUE(request.signature_valid) << request.webhook_id;
    EXPECT_EQ(request.idempotency_key, request.webhook_id);
    for (const char c : request.webhook_id) EXPECT_TRUE(c > 0x20 && c < 0x7F) << request.webhook_id;
    ids_of_key[request.key].insert(request.webhook_id);
  }
  EXPECT_EQ(receiver.requests().size(), 2 * keys.size());
  ASSERT_EQ(ids_of_key.size(), keys.size());
  for (const auto& [key, ids] : ids_of_key) {
    EXPECT_TRUE(keys.count(key)) << key << " does not decode to a key of the outbox";
    EXPECT_EQ(ids.size(), 1u) << key << ": the header id changed between attempts";
  }
  EXPECT_EQ(connectors::http::header_id("ledger:tx-100%:1"), "ledger:tx-100%25:1");
  EXPECT_EQ(connectors::http::header_id("ledger:tx with spaces:1"), "ledger:tx%20with%20spaces:1");
  EXPECT_EQ(connectors::http::header_id("ledger:tx-plain:1"), "ledger:tx-plain:1");
}

// A destination URL with credentials and a token in its query: neither reaches last_error
// (so neither the logs nor `outbox list`), and rows stored before are shown redacted.
TEST(Relay, DestinationCredentialsNeverReachLastErrorOrTheOutboxList) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.fail_always(Failure::kDrop);
  insert_events(db, 1, 1);
  auto options = fast_options(/*max_attempts=*/1);
  connectors::http::WebhookOptions webhook;
  webhook.url = "http://relay-user:s3cret@127.0.0.1:" + std::to_string(receiver.port()) + "/events?token=t0ken";
  webhook.signing_key = *connectors::http::decode_secret(kSecret);
  webhook.request_timeout = options.config.request_timeout;
  Sinks sinks;
  sinks.emplace(kDestination, std::make_unique<connectors::http::WebhookSink>(webhook));
  Relay relay(db.url(), std::move(sinks), options);

  relay.drain();

  const std::string error = db.scalar("SELECT last_error FROM outbox");
  EXPECT_EQ(db.scalar("SELECT status FROM outbox"), "dead");
  EXPECT_NE(error.find("http://***@127.0.0.1:" + std::to_string(receiver.port()) + "/events?***"), std::string::npos)
      << error;
  EXPECT_EQ(error.find("s3cret"), std::string::npos) << error;
  EXPECT_EQ(error.find("t0ken"), std::string::npos) << error;

  // As a version that did not redact stored it: the dead letter keeps the event's last error.
  db.scalar("UPDATE tidemark_dead_letter SET last_error = 'receive http://old:s3cret@h/p?token=t0ken: reset' "
            "RETURNING 1");
  auto connection = db.connect();
  const auto entries = list_outbox(*connection, OutboxFilter{});
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].last_error, "receive http://***@h/p?***: reset");
}

TEST(Outbox, ListFiltersByStatusAndDestination) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  receiver.fail_always(Failure::kBadRequest);
  {
    // One dead event (a 400 at its first attempt), then two pending of another account.
    auto connection = db.connect();
    pqxx::work txn(*connection);
    insert_event(txn, "tx-1", "acct-1");
    txn.commit();
    const auto options = fast_options();
    Relay(db.url(), sinks_for(receiver, options), options).drain();
    pqxx::work more(*connection);
    insert_event(more, "tx-0", "acct-0");
    insert_event(more, "tx-2", "acct-0");
    more.commit();
  }
  auto connection = db.connect();

  OutboxFilter dead;
  dead.status = "dead";
  const auto entries = list_outbox(*connection, dead);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].idempotency_key, "ledger:tx-1:1");
  EXPECT_EQ(entries[0].last_error, "HTTP 400: rejected");

  OutboxFilter other;
  other.destination = "other";
  EXPECT_TRUE(list_outbox(*connection, other).empty());
  OutboxFilter limited;
  limited.limit = 2;
  EXPECT_EQ(list_outbox(*connection, limited).size(), 2u);
  EXPECT_EQ(retry_dead_outbox_events(*connection), 1u);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM outbox WHERE status = 'pending' AND attempts = 0"), "3");
}

}  // namespace
}  // namespace tidemark::pipeline::relay

namespace tidemark::pipeline::relay {
namespace {

// Forwards to a real sink and counts the deliveries started off the io_context's thread.
class LoopThreadSink : public Sink {
 public:
  LoopThreadSink(std::unique_ptr<Sink> inner, boost::asio::io_context& io) : inner_(std::move(inner)), io_(io) {}
  boost::asio::awaitable<DeliveryResult> deliver(OutboxEvent event) override {
    ++deliveries;
    if (!io_.get_executor().running_in_this_thread()) ++off_the_io_context;
    return inner_->deliver(std::move(event));
  }
  std::atomic<int> deliveries{0};
  std::atomic<int> off_the_io_context{0};

 private:
  std::unique_ptr<Sink> inner_;
  boost::asio::io_context& io_;
};

// serve's entry point: the loop runs on the io_context it is given (its deliveries start
// there; the webhook sink's answers come back to it from the sink's own thread), and stop()
// ends it by cancelling its idle wait, which would otherwise last an hour.
TEST(Relay, StartRunsTheLoopOnTheGivenIoContextAndStopCancelsItsWait) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  insert_events(db, 3, 1);  // one account: each event is claimed once its predecessor is recorded
  auto options = fast_options();
  options.poll_interval = 1h;
  boost::asio::io_context io;
  auto sinks = sinks_for(receiver, options);
  auto sink = std::make_unique<LoopThreadSink>(std::move(sinks.at(kDestination)), io);
  auto& observed = *sink;
  sinks[kDestination] = std::move(sink);
  Relay relay(db.url(), std::move(sinks), options);

  std::promise<std::exception_ptr> ended;
  auto ended_future = ended.get_future();
  relay.start(io, [&ended](std::exception_ptr error) { ended.set_value(std::move(error)); });
  std::thread io_thread([&io] { io.run(); });
  struct JoinIo {
    Relay& relay;
    std::thread& thread;
    ~JoinIo() {
      relay.stop();
      if (thread.joinable()) thread.join();
    }
  } join_io{relay, io_thread};

  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (db.scalar("SELECT count(*) FROM outbox WHERE status = 'delivered'") != "3" &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(db.scalar("SELECT count(*) FROM outbox WHERE status = 'delivered'"), "3");
  relay.stop();
  ASSERT_EQ(ended_future.wait_for(10s), std::future_status::ready) << "stop() did not end the loop";
  EXPECT_EQ(ended_future.get(), nullptr);
  io_thread.join();  // io.run() returned: the loop was the io_context's only work
  EXPECT_EQ(observed.deliveries, 3);
  EXPECT_EQ(observed.off_the_io_context, 0) << "deliveries started off the io_context's thread";
  EXPECT_EQ(receiver.requests().size(), 3u);
}

}  // namespace
}  // namespace tidemark::pipeline::relay

namespace tidemark::pipeline::relay {
namespace {

// A relay serving on a thread of its own (run()), stopped and joined when the test ends.
class ServingRelay {
 public:
  ServingRelay(const TestDatabase& db, const TestReceiver& receiver, const RelayOptions& options)
      : relay_(db.url(), sinks_for(receiver, options), options), ended_(std::async(std::launch::async, [this] {
          relay_.run();
        })) {}
  ~ServingRelay() {
    relay_.stop();
    ended_.wait();
  }
  bool running() const { return ended_.wait_for(0s) != std::future_status::ready; }

 private:
  Relay relay_;
  std::future<void> ended_;
};

// Waits until `condition` holds; false on timeout.
template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// The backend of the relay's LISTEN connection, "" while there is none.
std::string listener_pid(const TestDatabase& db) {
  return db.scalar("SELECT COALESCE(min(pid)::text, '') FROM pg_stat_activity WHERE query = 'LISTEN " +
                   std::string(kOutboxChannel) + "'");
}

// Its claim has run and committed: the relay idles until its poll interval passes. (The
// statement is known by its first comment: pg_stat_activity keeps only its first 1 KiB.)
bool claimed_and_idle(const TestDatabase& db) {
  return db.scalar("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '-- Records the deliveries%' AND state = 'idle'") !=
         "0";
}

// The client sessions and what each ran last, for a failure's message.
std::string sessions(const TestDatabase& db) {
  return db.scalar("SELECT string_agg(state || ': ' || left(query, 100), E'\\n') FROM pg_stat_activity "
                   "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()");
}

// One event committed as the commit step does: its change, and a NOTIFY when `notify`.
void commit_event(const TestDatabase& db, const std::string& transaction_id, bool notify) {
  auto connection = db.connect();
  pqxx::work txn(*connection);
  insert_event(txn, transaction_id, "acct-" + transaction_id);
  if (notify) txn.exec(std::string("NOTIFY ") + kOutboxChannel);
  txn.commit();
}

TEST(RelayListen, ACommitThatNotifiesWakesAnIdleRelayLongBeforeItsPollInterval) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  auto options = fast_options();
  options.poll_interval = 60s;
  ServingRelay relay(db, receiver, options);
  ASSERT_TRUE(eventually([&] { return !listener_pid(db).empty() && claimed_and_idle(db); })) << sessions(db);

  commit_event(db, "tx-quiet", false);
  EXPECT_FALSE(receiver.wait_for_applied(1, 1s)) << "delivered without a notification: the relay was not idle";
  const auto committed = std::chrono::steady_clock::now();
  commit_event(db, "tx-notified", true);
  ASSERT_TRUE(receiver.wait_for_applied(2, 20s)) << "not woken by the NOTIFY (it polls every 60 s)";
  EXPECT_LT(std::chrono::steady_clock::now() - committed, 20s);
  EXPECT_TRUE(relay.running());
}

// The LISTEN connection's backend is terminated. With a reconnect an hour away, polling still
// delivers and the relay goes on.
TEST(RelayListen, PollingDeliversWhileTheListenConnectionIsBroken) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  auto options = fast_options();
  options.poll_interval = 200ms;
  options.listen_retry = 1h;
  ServingRelay relay(db, receiver, options);
  ASSERT_TRUE(eventually([&] { return !listener_pid(db).empty(); }));
  db.scalar("SELECT pg_terminate_backend(" + listener_pid(db) + ")::text");
  ASSERT_TRUE(eventually([&] { return listener_pid(db).empty(); }));

  commit_event(db, "tx-after-break", true);
  EXPECT_TRUE(receiver.wait_for_applied(1, 20s)) << "polling did not deliver while LISTEN was down";
  EXPECT_TRUE(relay.running()) << "the broken LISTEN connection ended the relay";
  EXPECT_TRUE(listener_pid(db).empty()) << "connected again before listen_retry";
}

// ...and with a short reconnect delay, a new LISTEN connection is made, and a commit during
// the gap (its notification lost) is delivered without waiting for the poll.
TEST(RelayListen, ABrokenListenConnectionIsMadeAgainAndWhatCameMeanwhileIsDelivered) {
  TestDatabase db;
  TestReceiver receiver(kSecret);
  auto options = fast_options();
  options.poll_interval = 60s;
  options.listen_retry = 300ms;
  ServingRelay relay(db, receiver, options);
  ASSERT_TRUE(eventually([&] { return !listener_pid(db).empty() && claimed_and_idle(db); }));
  const std::string first = listener_pid(db);
  db.scalar("SELECT pg_terminate_backend(" + first + ")::text");
  commit_event(db, "tx-in-the-gap", true);

  ASSERT_TRUE(eventually([&] {
    const std::string now = listener_pid(db);
    return !now.empty() && now != first;
  })) << "the LISTEN connection was not made again";
  EXPECT_TRUE(receiver.wait_for_applied(1, 20s)) << "the event committed in the gap waits for the 60 s poll";
  commit_event(db, "tx-after-reconnect", true);
  EXPECT_TRUE(receiver.wait_for_applied(2, 20s)) << "the new LISTEN connection does not wake the relay";
  EXPECT_TRUE(relay.running());
}

// A TCP port on 127.0.0.1 whose connections the kernel completes and nobody ever answers: a
// database host that hangs. Closing it resets the connections it holds.
class SilentServer {
 public:
  SilentServer() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), size) != 0 || ::listen(fd_, 128) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
      throw std::system_error(errno, std::generic_category(), "silent server on 127.0.0.1");
    }
    port_ = ntohs(address.sin_port);
  }
  ~SilentServer() { close(); }
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  unsigned short port() const { return port_; }

 private:
  int fd_;
  unsigned short port_ = 0;
};

// A database that accepts the TCP connection and never answers: each connection of the
// relay, its LISTEN connection too, gives up after the connect timeout (db::connect's, here
// the URL's own 2 s, libpq's floor), so run() reports that it waits for the database and
// stop() ends it. Before, those connects waited for ever, and stop() with them.
TEST(RelayListen, ADatabaseThatNeverAnswersHoldsNeitherTheRelayNorItsStop) {
  SilentServer silent;
  TestReceiver receiver(kSecret);
  auto options = fast_options();
  options.listen_retry = 50ms;
  options.database_retries = {.max_attempts = 1, .base_delay = 10ms, .max_delay = 10ms};
  Relay relay("postgresql://tidemark@127.0.0.1:" + std::to_string(silent.port()) + "/tidemark?sslmode=disable&connect_timeout=2",
              sinks_for(receiver, options), options);
  auto ended = std::async(std::launch::async, [&relay] { relay.run(); });
  struct Release {  // when an expectation failed: the hanging connects are reset, so the relay ends
    SilentServer& silent;
    Relay& relay;
    std::future<void>& ended;
    ~Release() {
      silent.close();
      relay.stop();
      ended.wait();
    }
  } release{silent, relay, ended};

  EXPECT_TRUE(eventually([&] { return relay.waiting_for_database(); }, 60s))
      << "a connect to the silent database still waits after 60 s";
  relay.stop();
  EXPECT_EQ(ended.wait_for(60s), std::future_status::ready) << "stop() still waits for a connect after 60 s";
}

}  // namespace
}  // namespace tidemark::pipeline::relay
