// The NATS sink against a real nats-server with JetStream on loopback (tests/support/
// nats_server): what it stores, Nats-Msg-Id dedup and its counter, the start-up check of the
// stream's duplicate window, setup_stream, and a server that goes away.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>

#include "app/config/config.hpp"
#include "app/wiring/sinks.hpp"
#include "connectors/nats_sink/nats_sink.hpp"
#include "metrics/metrics.hpp"
#include "pipeline/async/run_to_end.hpp"
#include "tests/support/nats_server.hpp"
#include "tests/support/nats_sink_stream.hpp"

namespace tidemark::connectors::nats_sink {
namespace {

using namespace std::chrono_literals;
using pipeline::DeliveryResult;
using pipeline::OutboxEvent;
using ::testing::HasSubstr;
using tidemark::testing::count_by_msg_id;
using tidemark::testing::NatsServer;
using tidemark::testing::read_stream;

constexpr char kStream[] = "LEDGER";
constexpr char kSubject[] = "ledger.events";
constexpr pipeline::Duration kHorizon = 30s;

OutboxEvent event(const std::string& key, const std::string& partition_key, const std::string& payload) {
  OutboxEvent out;
  out.id = 1;
  out.destination = "bus";
  out.idempotency_key = key;
  out.partition_key = partition_key;
  out.sequence = 1;
  out.payload = payload;
  out.attempt = 1;
  return out;
}

// Delivers and waits for the answer (every answer comes within the sink's ack timeout).
DeliveryResult deliver(pipeline::Sink& sink, OutboxEvent outbox_event) {
  return pipeline::async::run_to_end(sink.deliver(std::move(outbox_event)));
}

class NatsSinkPublish : public ::testing::Test {
 protected:
  ConnectionOptions connection() const { return {.servers = {server_.url()}, .connect_timeout = 2s}; }

  NatsSinkOptions options() const {
    NatsSinkOptions options;
    options.connection = connection();
    options.subject = kSubject;
    options.stream = kStream;
    options.redelivery_horizon = kHorizon;
    options.ack_timeout = 1s;
    options.max_in_flight = 4;
    return options;
  }

  NatsServer server_;
};

TEST_F(NatsSinkPublish, PublishesThePayloadToTheKeysSubjectWithTheIdempotencyKeyAsNatsMsgId) {
  ASSERT_TRUE(setup_stream(connection(), kStream, kSubject, kHorizon).created);
  NatsSink sink(options());

  EXPECT_EQ(deliver(sink, event("bus:t1:1", "acc-A", R"({"n":1})")).status, DeliveryResult::Status::kDelivered);
  EXPECT_EQ(deliver(sink, event("bus:t 2:1", "acc.B", R"({"n":2})")).status, DeliveryResult::Status::kDelivered);
  EXPECT_EQ(deliver(sink, event("bus:t3:1", "", R"({"n":3})")).status, DeliveryResult::Status::kDelivered);

  const auto messages = read_stream(server_.url(), kStream);
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[0].subject, "ledger.events.acc-A");
  EXPECT_EQ(messages[0].msg_id, "bus:t1:1");
  EXPECT_EQ(messages[0].data, R"({"n":1})");
  // The key's '.' is encoded, so the event stays on one token; the id as webhook-id encodes it.
  EXPECT_EQ(messages[1].subject, "ledger.events.acc%2EB");
  EXPECT_EQ(messages[1].msg_id, "bus:t%202:1");
  EXPECT_EQ(messages[2].subject, "ledger.events.%00");
}

TEST_F(NatsSinkPublish, TheSameEventTwiceIsStoredOnceAndCountedAsADuplicate) {
  ASSERT_TRUE(setup_stream(connection(), kStream, kSubject, kHorizon).created);
  // Through the wiring, as relay and serve build it: the counter is the exported family.
  const auto config = app::config::parse_config(
      "pipelines:\n  p:\n    source: {path: in.csv}\n    destinations:\n"
      "      - {name: bus, kind: nats, servers: [" + server_.url() + "], subject: " + kSubject + ", stream: " +
          kStream + "}\n"
      "relay: {max_attempts: 2, base_delay: 1s, max_delay: 1s, connect_timeout: 1s, request_timeout: 1s}\n",
      "config.yaml");
  metrics::Metrics metrics;
  auto sinks = app::make_nats_sinks(config, &metrics);
  ASSERT_EQ(sinks.count("bus"), 1u);
  EXPECT_THAT(metrics.serialize(), HasSubstr("tidemark_nats_duplicates_total{destination=\"bus\"} 0"));

  const auto first = event("bus:t1:1", "acc-A", R"({"n":1})");
  EXPECT_EQ(deliver(*sinks.at("bus"), first).status, DeliveryResult::Status::kDelivered);
  EXPECT_EQ(deliver(*sinks.at("bus"), first).status, DeliveryResult::Status::kDelivered);

  const auto messages = read_stream(server_.url(), kStream);
  EXPECT_EQ(messages.size(), 1u);
  EXPECT_EQ(count_by_msg_id(messages).at("bus:t1:1"), 1);
  EXPECT_THAT(metrics.serialize(), HasSubstr("tidemark_nats_duplicates_total{destination=\"bus\"} 1"));
}

TEST_F(NatsSinkPublish, AStreamWhoseDuplicateWindowIsNotLongerThanTheHorizonIsRefusedNamingBoth) {
  // JetStream's own default window (2 minutes) against a longer horizon.
  tidemark::testing::create_stream(server_.url(), kStream, {std::string(kSubject) + ".>"}, 2min);
  auto too_short = options();
  too_short.redelivery_horizon = 811s;
  try {
    NatsSink sink(too_short);
    FAIL() << "the sink started";
  } catch (const StreamRefused& error) {
    EXPECT_THAT(error.what(), HasSubstr("LEDGER has a duplicate window of 2m"));
    EXPECT_THAT(error.what(), HasSubstr("redelivery horizon of 811s"));
  }
  too_short.redelivery_horizon = 119s;
  EXPECT_NO_THROW(NatsSink{too_short});
}

TEST_F(NatsSinkPublish, AMissingStreamIsRefusedAndAnUnreachableServerIsANatsError) {
  try {
    NatsSink sink(options());
    FAIL() << "the sink started";
  } catch (const StreamRefused& error) {
    EXPECT_THAT(error.what(), HasSubstr("JetStream stream LEDGER does not exist"));
  }
  auto nowhere = options();
  nowhere.connection.servers = {"nats://127.0.0.1:1"};
  EXPECT_THROW(NatsSink{nowhere}, NatsError);
}

TEST_F(NatsSinkPublish, SetupCreatesTwiceTheHorizonAndNeverModifiesAnExistingStream) {
  const auto created = setup_stream(connection(), kStream, kSubject, kHorizon, 0ns);
  EXPECT_TRUE(created.created);
  EXPECT_EQ(created.duplicate_window, 60s);
  const auto again = setup_stream(connection(), kStream, kSubject, kHorizon, 0ns);
  EXPECT_FALSE(again.created);
  EXPECT_TRUE(again.differences.empty()) << again.differences.front();

  // A longer horizon now: the stream is reported, not changed.
  const auto longer = setup_stream(connection(), kStream, kSubject, 45s, 0ns);
  EXPECT_FALSE(longer.created);
  EXPECT_EQ(longer.duplicate_window, 60s);
  ASSERT_FALSE(longer.differences.empty());
  EXPECT_THAT(longer.differences.front(), HasSubstr("duplicate window 1m, setup would set 90s"));
  EXPECT_EQ(setup_stream(connection(), kStream, kSubject, kHorizon, 0ns).duplicate_window, 60s);

  // MaxAge caps the window.
  const auto capped = setup_stream(connection(), "CAPPED", "capped", kHorizon, 40s);
  EXPECT_TRUE(capped.created);
  EXPECT_EQ(capped.duplicate_window, 40s);
}

TEST_F(NatsSinkPublish, AServerThatIsDownIsRetriedNotDeadAndDeliveredOnceItIsBack) {
  ASSERT_TRUE(setup_stream(connection(), kStream, kSubject, kHorizon).created);
  NatsSink sink(options());
  ASSERT_EQ(deliver(sink, event("bus:t1:1", "a", "{}")).status, DeliveryResult::Status::kDelivered);

  server_.node().kill();
  const auto while_down = deliver(sink, event("bus:t2:1", "a", "{}"));
  EXPECT_EQ(while_down.status, DeliveryResult::Status::kRetry) << while_down.error;
  EXPECT_THAT(while_down.error, HasSubstr("publish to ledger.events.a (stream LEDGER)"));

  server_.node().start();
  server_.node().wait_ready();
  // The client reconnects on its own (every 2 s); until then each attempt is a retry, as the
  // relay would see it. Bounded: reconnecting takes a few seconds at most.
  DeliveryResult after;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  do {
    after = deliver(sink, event("bus:t2:1", "a", "{}"));
    ASSERT_NE(after.status, DeliveryResult::Status::kDead) << after.error;
  } while (after.status != DeliveryResult::Status::kDelivered && std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(after.status, DeliveryResult::Status::kDelivered) << after.error;
  const auto counts = count_by_msg_id(read_stream(server_.url(), kStream));
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts.at("bus:t2:1"), 1) << "a publish buffered while down and the retry are one message";
}

}  // namespace
}  // namespace tidemark::connectors::nats_sink
