#pragma once
// The one interface the relay delivers through (STYLE habit 1). Connectors implement it;
// the relay never knows whether an event goes to an HTTP webhook or elsewhere.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

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
  using Completion = std::function<void(DeliveryResult)>;
  virtual ~Sink() = default;
  // Starts delivering `event` and returns at once; `done` is called exactly once, from any
  // thread, when the outcome is known (bounded by the sink's timeouts). Deliveries may overlap.
  virtual void deliver(OutboxEvent event, Completion done) = 0;
};

// The sinks the relay delivers through, by destination name.
using Sinks = std::map<std::string, std::unique_ptr<Sink>>;

}  // namespace tidemark::pipeline
