#pragma once
// Operating the outbox by hand: `tidemark outbox list` and `tidemark outbox retry`, and
// serve's GET /v1/outbox and POST /v1/outbox/{id}/retry.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace tidemark::pipeline {

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
  std::optional<std::string> partition_key;  // none for rows without an order to keep
  std::optional<std::int64_t> sequence;
  std::string created_at;  // RFC 3339, UTC
};

struct OutboxFilter {
  std::optional<std::string> status;
  std::optional<std::string> destination;
  std::size_t limit = 100;
  std::int64_t after_id = 0;  // only events with a greater id (0: from the oldest)
};

std::vector<OutboxEntry> list_outbox(pqxx::connection& connection, const OutboxFilter& filter);

// Event `id`, or nullopt when there is none.
std::optional<OutboxEntry> find_outbox_event(pqxx::connection& connection, std::int64_t id);

// Wakes the relays that LISTEN on kOutboxChannel when `txn` commits (PostgreSQL delivers a
// NOTIFY at the commit, and not at all on a rollback).
void notify_relays(pqxx::transaction_base& txn);

// Which events a retry revives: `outbox retry` also re-drives a waiting one, the console only
// a dead letter (a waiting event is the relay's to schedule).
enum class RetryScope { kDeadOrPending, kDeadOnly };

// Makes event `id` due now with a fresh attempt budget and wakes the relays. False when there
// is no such event or it is not in `scope` (a delivered event never is).
bool retry_outbox_event(pqxx::connection& connection, std::int64_t id, RetryScope scope = RetryScope::kDeadOrPending);

// Re-drives every dead event and wakes the relays; returns how many.
std::size_t retry_dead_outbox_events(pqxx::connection& connection);

}  // namespace tidemark::pipeline
