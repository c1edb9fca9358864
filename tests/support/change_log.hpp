#pragma once
// Events for the relay's tests, written into the change log (migrations/0029_change_log.sql)
// the way a batch writes them (sql/entity/apply_batch.sql): the key's counter advanced, the
// destinations registered, one tidemark_change per event whatever the number of destinations.
// Nothing here delivers, claims or marks: the tests drive the product's own statements.
#include <cstdint>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace tidemark::testing {

// One event for append_changes: its key's stream, its idempotency key without
// '<destination>:' ("tx-1:1"), and its payload without 'event_id' and 'sequence' (the view
// and the claim add them for each destination).
struct Change {
  std::string partition_key;
  std::string event_key;
  std::string payload_json;
};

// The entity of the changes the tests append: one the write path never uses, so that event
// keys cannot collide with a run's.
inline constexpr char kTestEntity[] = "test";

// Appends `changes` for `destinations`, each key's in the order given after the changes
// already logged for it (key_sequence from tidemark_partition_sequence, as a batch takes it);
// returns their positions in that order. One statement, so a backlog of 100,000 is quick.
std::vector<std::int64_t> append_changes(pqxx::transaction_base& txn, const std::vector<std::string>& destinations,
                                         const std::vector<Change>& changes);
// The same for one event; returns its position.
std::int64_t append_change(pqxx::transaction_base& txn, const std::vector<std::string>& destinations,
                           const std::string& partition_key, const std::string& event_key,
                           const std::string& payload_json);

// `count` events spread round robin over `keys` keys 'acct-0'... (event i: key 'acct-<i % keys>',
// event key '<prefix><i>:1', payload {"n": i}): a backlog for claim and load tests.
std::vector<std::int64_t> append_backlog(pqxx::transaction_base& txn, const std::vector<std::string>& destinations,
                                         int count, int keys, const std::string& prefix = "tx-");

// tidemark_register_destinations: append_changes does it too, but in the appending
// transaction, which then holds the registration lock until it ends (another writer of a name
// not registered yet waits for it); a test that keeps a writer open while another commits
// registers first.
void register_destinations(pqxx::transaction_base& txn, const std::vector<std::string>& destinations);

// tidemark_log_ingest for each destination: gives the keys of the changes committed since its
// last read a head (due now), as a claim does first. Commit the changes before.
void ingest(pqxx::transaction_base& txn, const std::vector<std::string>& destinations);

// Makes the head of `partition_key` for `destination` due now, as if its backoff (or its
// lease) had run out: the clock moved, not the relay's logic.
void make_head_due(pqxx::transaction_base& txn, const std::string& destination, const std::string& partition_key);

// The outbox id of the event at `position` for `destination` (docs/delivery.md: position *
// 1024 + the destination's number); the destination must be registered.
std::int64_t outbox_id(pqxx::transaction_base& txn, std::int64_t position, const std::string& destination);

}  // namespace tidemark::testing
