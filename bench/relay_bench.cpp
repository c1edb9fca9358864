// Relay throughput: events/s from a pre-filled change log to a loopback receiver that answers
// at once, next to the receiver's own ceiling measured with the same client (the webhook
// sink, signing on) at the same concurrency but without the database.
//   relay_bench [events=20000] [accounts=1000] [max_in_flight=16]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "connectors/http/signature.hpp"
#include "connectors/http/webhook_sink.hpp"
#include "pipeline/relay/relay.hpp"
#include "tests/support/change_log.hpp"
#include "tests/support/test_database.hpp"
#include "tests/support/test_receiver.hpp"

namespace {

using namespace tidemark;
using Clock = std::chrono::steady_clock;

constexpr char kSecret[] = "whsec_dGlkZW1hcmstYmVuY2gtc2VjcmV0";

connectors::http::WebhookOptions webhook_options(const std::string& url, std::size_t in_flight) {
  connectors::http::WebhookOptions options;
  options.url = url;
  options.max_idle_connections = in_flight;
  options.signing_key = *connectors::http::decode_secret(kSecret);
  return options;
}

// An event's payload as the change log holds it: without event_id and sequence, which the
// claim adds for the destination.
std::string logged_payload(int i, int account) {
  return R"({"transaction_id":"tx-)" + std::to_string(i) +
         R"(","source_revision":1,"amount":"12.34","previous_amount":null,"account_id":"acct-)" +
         std::to_string(account) + R"(","occurred_at":null})";
}

// The same as a destination receives it.
std::string payload(const std::string& key, int i, int account, int sequence) {
  std::string text = logged_payload(i, account);
  text.pop_back();
  return text + R"(,"event_id":")" + key + R"(","sequence":)" + std::to_string(sequence) + "}";
}

// One of the ceiling's `in_flight` senders: delivers the next event until `events` are sent.
boost::asio::awaitable<void> send_events(connectors::http::WebhookSink* sink, int events, int* next, int* failed) {
  while (*next < events) {
    const int i = (*next)++;
    pipeline::OutboxEvent event;
    event.idempotency_key = "ceiling:tx-" + std::to_string(i) + ":1";
    event.payload = payload(event.idempotency_key, i, i % 1000, i / 1000 + 1);
    boost::asio::awaitable<pipeline::DeliveryResult> delivery = sink->deliver(std::move(event));
    const pipeline::DeliveryResult result = co_await std::move(delivery);
    if (result.status != pipeline::DeliveryResult::Status::kDelivered) ++*failed;
  }
}

// The same client load without the database: `events` signed POSTs, `in_flight` at a time,
// awaited on one io_context as the relay's are.
double ceiling(const std::string& url, int events, std::size_t in_flight) {
  connectors::http::WebhookSink sink(webhook_options(url, in_flight));
  boost::asio::io_context io(1);
  int next = 0;
  int failed = 0;
  const auto start = Clock::now();
  for (std::size_t sender = 0; sender < in_flight; ++sender) {
    boost::asio::co_spawn(io, send_events(&sink, events, &next, &failed), boost::asio::detached);
  }
  io.run();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (failed > 0) std::fprintf(stderr, "ceiling: %d requests failed\n", failed);
  return events / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const int events = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int accounts = argc > 2 ? std::atoi(argv[2]) : 1000;
  const std::size_t in_flight = argc > 3 ? static_cast<std::size_t>(std::atoi(argv[3])) : 16;

  testing::TestReceiver receiver(kSecret);
  const double receiver_ceiling = ceiling(receiver.url(), events, in_flight);

  testing::TestDatabase db;
  {
    auto connection = db.connect();
    pqxx::work txn(*connection);
    std::vector<testing::Change> changes;
    for (int i = 0; i < events; ++i) {
      const int account = i % accounts;
      changes.push_back({"acct-" + std::to_string(account), "tx-" + std::to_string(i) + ":1", logged_payload(i, account)});
    }
    testing::append_changes(txn, {"ledger"}, changes);
    txn.commit();
    pqxx::nontransaction analyze(*connection);
    analyze.exec("ANALYZE tidemark_change");
  }

  pipeline::relay::RelayOptions options;
  options.config.max_in_flight = in_flight;
  options.poll_interval = std::chrono::milliseconds(20);
  pipeline::Sinks sinks;
  sinks.emplace("ledger", std::make_unique<connectors::http::WebhookSink>(webhook_options(receiver.url(), in_flight)));
  pipeline::relay::Relay relay(db.url(), std::move(sinks), options);
  const auto start = Clock::now();
  const auto stats = relay.drain();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double relay_rate = stats.delivered / seconds;

  std::printf("events %d, accounts %d, max_in_flight %zu\n", events, accounts, in_flight);
  std::printf("receiver ceiling (sink only, signed): %.0f requests/s\n", receiver_ceiling);
  std::printf("relay (outbox -> receiver):           %.0f events/s (%llu delivered in %.2f s)\n", relay_rate,
              static_cast<unsigned long long>(stats.delivered), seconds);
  std::printf("ratio: %.2f\n", relay_rate / receiver_ceiling);
  return stats.delivered == static_cast<std::uint64_t>(events) ? 0 : 1;
}
