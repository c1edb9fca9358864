#pragma once
// Operating the outbox by hand: `tidemark outbox list` and `tidemark outbox retry`.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace tidemark::pipeline::relay {

// The channel a commit that wrote outbox rows NOTIFYs, and that a serving relay LISTENs on.
inline constexpr char kOutboxChannel[] = "tidemark_outbox";

struct OutboxEntry {
  std::int64_t id = 0;
  std::string destination;
  std::string status;  // pending | delivered | dead
  int attempts = 0;
  std::string idempotency_key;
  std::string next_attempt_at;  // RFC 3339, UTC
  std::string last_error;       // "" when none
  std::string delivered_at;     // "" when not delivered
};

struct OutboxFilter {
  std::optional<std::string> status;
  std::optional<std::string> destination;
  std::size_t limit = 100;
};

std::vector<OutboxEntry> list_outbox(pqxx::connection& connection, const OutboxFilter& filter);

// Makes event `id` due now with a fresh attempt budget. False when there is no such event
// or it was already delivered.
bool retry_outbox_event(pqxx::connection& connection, std::int64_t id);

// Re-drives every dead event; returns how many.
std::size_t retry_dead_outbox_events(pqxx::connection& connection);

}  // namespace tidemark::pipeline::relay
