#pragma once
// Delivery states for tests of what reads the change log (views, retention, status, the CLI):
// events settled the relay's way, through its own statements (tidemark_relay_claim,
// tidemark_relay_mark_failed), and the few states a test sets on a key's cursor itself
// (migrations/0029_change_log.sql).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace tidemark::testing {

// Appends (append_change) an event alone on its key `key`, with the event key `key` and an
// empty payload, logged `age` ago (an interval: "8 days"): for tests of what goes by age.
std::int64_t append_aged_change(pqxx::transaction_base& txn, const std::string& destination, const std::string& key,
                                const std::string& age);

// An event as one call of the relay's claim (relay/claim.sql) offers it. partition_key and
// sequence are empty for an event without an order (migrated from before sequences).
struct ClaimedEvent {
  std::int64_t id = 0;
  std::string destination;
  std::string idempotency_key;
  std::optional<std::string> partition_key;
  std::optional<std::int64_t> sequence;
  std::string payload;
  int attempt = 0;
};

// One call of relay/claim.sql, committed: records `delivered` as delivered with their
// attempts, and claims up to `limit` due events of each of `destinations` and `limit` in all.
std::vector<ClaimedEvent> claim(pqxx::connection& connection, const std::vector<std::string>& destinations,
                                const std::vector<ClaimedEvent>& delivered = {}, std::int64_t limit = 100);

// The relay's loop with destinations that accept everything: claims, and records what it
// claimed as delivered in the next claim, until nothing is due. Every event in the order it
// was claimed.
std::vector<ClaimedEvent> deliver_all(pqxx::connection& connection, const std::vector<std::string>& destinations);

enum class Settlement { kDelivered, kDead };

// Settles the events of `destination` due now, as the relay would with a destination that
// accepts (kDelivered) or refuses each for good (kDead, tidemark_relay_mark_failed with
// `error`): round after round, since a key's next event is due once the one before it is
// settled, until none is due or `max_events` (all when negative) are settled. Each round
// commits. Returns how many were settled. Events a test means to leave pending are
// appended after it settles the others.
std::int64_t settle_due(pqxx::connection& connection, const std::string& destination, Settlement settlement,
                        std::int64_t max_events = -1, const std::string& error = "given up by the test");

// Records the change at `position` as delivered to `destination`, alone: its key's cursor
// moves past it, as the relay's delivered mark would, the rest of the destination staying as
// it is. The change must be committed and be the next its key has for the destination.
void mark_delivered(pqxx::transaction_base& txn, const std::string& destination, std::int64_t position);

// Makes every event of `destination` pending again, from each key's first: its cursors go back
// to before anything was delivered (the recorded attempts go too), so the relay sends the
// whole history once more. The destination's sequences must start at 1 on every key.
void redeliver_everything(pqxx::transaction_base& txn, const std::string& destination);

}  // namespace tidemark::testing
