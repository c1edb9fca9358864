#pragma once
// The NATS JetStream sink (`kind: nats` destinations): publishes each outbox event's payload
// to `<subject>.<partition key>` with the idempotency key as `Nats-Msg-Id`, and waits for the
// stream's PubAck. JetStream drops a second message with the same id inside the stream's
// duplicate window, so a redelivery within the window is stored once (docs/delivery.md "NATS").
// The nats.c client stays behind connectors/nats/connection.hpp, the one NATS edge.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "connectors/nats/connection.hpp"
#include "pipeline/core/duration.hpp"
#include "pipeline/core/error.hpp"
#include "pipeline/core/sink.hpp"

namespace tidemark::connectors::nats_sink {

// The stream cannot be used as configured (missing, or its duplicate window too short): the
// operator must fix the stream or the config. app/wiring reports it as a configuration
// error (exit 2) in these words.
struct StreamRefused : tidemark::Error {
  explicit StreamRefused(const std::string& message) : tidemark::Error(tidemark::ErrorKind::kConfig, message) {}
};

// The servers could not be reached or answered an API call with an error (exit 1: the world
// failed, trying later may work); how to reach them. The NATS edge's own (connectors/nats).
using nats::ConnectionOptions;
using nats::NatsError;

struct NatsSinkOptions {
  ConnectionOptions connection;
  std::string subject;  // events go to `<subject>.<token>` (subject_for)
  std::string stream;   // the stream that must capture them; checked at start
  // The relay's redelivery horizon: the stream's duplicate window must be longer (rule 16).
  pipeline::Duration redelivery_horizon{};
  std::chrono::milliseconds ack_timeout = std::chrono::seconds(10);  // waiting for the PubAck (and other requests)
  std::size_t max_in_flight = 16;  // publishes waiting for their PubAck at once
  // Called for every PubAck that says the stream already held the message (delivered).
  std::function<void()> on_duplicate;
};

// "" when a duplicate window of `window` is longer than `horizon`, else why not, naming both
// values and what to do.
std::string duplicate_window_problem(std::string_view stream, std::chrono::nanoseconds window,
                                     pipeline::Duration horizon);

// The window `tidemark nats setup` gives the sink's stream: twice the horizon, never more
// than `max_age` (JetStream refuses a window longer than the stream keeps messages); a
// max_age of 0 is no limit.
std::chrono::nanoseconds setup_duplicate_window(pipeline::Duration horizon, std::chrono::nanoseconds max_age);

// The answer to one publish, as the relay reads it. `status` is nats.c's natsStatus,
// `api_error` the JetStream error code of a refusal (0: none), `text` the client's message.
// Connection trouble, timeouts, no stream listening and a stream temporarily unable to store
// are retried; a refusal that no retry can change (message larger than the stream allows,
// sealed stream) is dead.
pipeline::DeliveryResult classify_publish(int status, int api_error, std::string_view text);

// What setup_stream did.
struct StreamSetup {
  bool created = false;                  // false: the stream existed and was left as it is
  std::chrono::nanoseconds duplicate_window{};  // the stream's window now
  std::vector<std::string> differences;  // an existing stream: each way it differs from what setup would create
};

// Creates `stream` capturing `<subject>.>`, file storage, limits retention, a duplicate
// window of setup_duplicate_window(horizon, max_age) and `max_age` (0: none). An existing
// stream is never modified: its differences are reported instead. NatsError when the
// servers cannot be reached or refuse the request.
StreamSetup setup_stream(const ConnectionOptions& connection, const std::string& stream, const std::string& subject,
                         pipeline::Duration redelivery_horizon,
                         std::chrono::nanoseconds max_age = std::chrono::nanoseconds{0});

class NatsSink final : public pipeline::Sink {
 public:
  // Connects and checks the stream: StreamRefused when it does not exist or its duplicate
  // window does not exceed the horizon; NatsError when no server answers.
  explicit NatsSink(NatsSinkOptions options);
  ~NatsSink() override;
  NatsSink(const NatsSink&) = delete;
  NatsSink& operator=(const NatsSink&) = delete;

  boost::asio::awaitable<pipeline::DeliveryResult> deliver(pipeline::OutboxEvent event) override;

 private:
  class Publisher;
  std::unique_ptr<Publisher> publisher_;
};

}  // namespace tidemark::connectors::nats_sink
