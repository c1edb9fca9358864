#pragma once
// The one interface the relay delivers through (STYLE habit 1). Connectors implement it;
// the relay never knows whether an event goes to an HTTP webhook or elsewhere. A delivery is
// an Asio awaitable, as everything that waits in the process is (docs/architecture.md,
// "Concurrency: one model"); the one Asio header here is the awaitable's own.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "pipeline/core/duration.hpp"

namespace tidemark::pipeline {

// One claimed outbox row.
struct OutboxEvent {
  std::int64_t id = 0;
  std::string destination;
  std::string idempotency_key;  // the receiver deduplicates by it; identical on every attempt
  std::string partition_key;    // "" when the row has none
  std::int64_t sequence = 0;
  std::string payload;          // the JSON body, byte-identical on every attempt
  int attempt = 0;              // 1 for the first attempt
};

// A destination's Retry-After is honoured up to this long; a longer (or overflowing) wish
// would park the event for years, so the event is tried again after this instead.
inline constexpr std::chrono::seconds kMaxRetryAfter = std::chrono::hours(1);

struct DeliveryResult {
  enum class Status {
    kDelivered,  // the destination acknowledged it
    kRetry,      // transient: try again later
    kDead,       // the destination refused it for good; retrying cannot help
  };
  Status status = Status::kRetry;
  std::string error;                               // why, for last_error; empty when delivered
  std::optional<std::chrono::seconds> retry_after;  // the destination's own wish (429/503 Retry-After), <= kMaxRetryAfter

  static DeliveryResult delivered() { return {Status::kDelivered, {}, std::nullopt}; }
  static DeliveryResult retry(std::string error, std::optional<std::chrono::seconds> after = std::nullopt) {
    return {Status::kRetry, std::move(error), after};
  }
  static DeliveryResult dead(std::string error) { return {Status::kDead, std::move(error), std::nullopt}; }
};

class Sink {
 public:
  virtual ~Sink() = default;
  // Delivers `event`; the awaiting coroutine resumes on its own executor with the outcome
  // (bounded by the sink's timeouts) and its io_context never blocks: a sink whose client
  // blocks does so on threads of its own. Deliveries may overlap. The sink must outlive
  // the co_await.
  virtual boost::asio::awaitable<DeliveryResult> deliver(OutboxEvent event) = 0;
  // The executor a sink's deliveries complete on when it has one of its own (the webhook's
  // I/O thread): the relay awaits its deliveries there, so that an answer does not change
  // threads to reach the relay. None: the relay awaits on its own.
  virtual std::optional<boost::asio::any_io_executor> executor() const { return std::nullopt; }
};

// The sinks the relay delivers through, by destination name.
using Sinks = std::map<std::string, std::unique_ptr<Sink>>;

}  // namespace tidemark::pipeline
