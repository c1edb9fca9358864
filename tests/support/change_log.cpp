#include "tests/support/change_log.hpp"

#include <algorithm>
#include <stdexcept>

#include "pipeline/store/pg/pg_text.hpp"

namespace tidemark::testing {

namespace {

// The write path's per-key numbering (sql/entity/apply_batch.sql): each key's counter
// advanced once by its number of changes, keys locked in partition_key order, and the nth
// change of a key in this call numbered counter - in_batch + nth.
constexpr char kAppendChanges[] = R"SQL(
WITH input AS (
  SELECT partition_key, event_key, payload, ord,
         row_number() OVER (PARTITION BY partition_key ORDER BY ord) AS nth,
         count(*) OVER (PARTITION BY partition_key) AS in_batch
    FROM unnest($2::text[], $3::text[], $4::jsonb[]) WITH ORDINALITY AS i(partition_key, event_key, payload, ord)
),
counted AS (
  INSERT INTO tidemark_partition_sequence AS s (partition_key, last_sequence)
  SELECT partition_key, count(*) FROM input GROUP BY partition_key ORDER BY partition_key
  ON CONFLICT (partition_key) DO UPDATE SET last_sequence = s.last_sequence + EXCLUDED.last_sequence
  RETURNING partition_key, last_sequence
)
INSERT INTO tidemark_change (partition_key, key_sequence, entity, event_key, destinations, payload)
SELECT i.partition_key, c.last_sequence - i.in_batch + i.nth, $5, i.event_key, $1::text[], i.payload
  FROM input i JOIN counted c USING (partition_key)
 ORDER BY i.ord
RETURNING position
)SQL";

}  // namespace

std::vector<std::int64_t> append_changes(pqxx::transaction_base& txn, const std::vector<std::string>& destinations,
                                         const std::vector<Change>& changes) {
  std::vector<std::string> keys;
  std::vector<std::string> event_keys;
  std::vector<std::string> payloads;
  for (const auto& change : changes) {
    keys.push_back(change.partition_key);
    event_keys.push_back(change.event_key);
    payloads.push_back(change.payload_json);
  }
  register_destinations(txn, destinations);
  const auto rows = txn.exec_params(kAppendChanges, pipeline::db::text_array_literal(destinations), pipeline::db::text_array_literal(keys),
                                    pipeline::db::text_array_literal(event_keys),
                                    pipeline::db::text_array_literal(payloads), kTestEntity);
  // Positions come from a sequence in insertion order, which is the order given.
  std::vector<std::int64_t> positions;
  for (const auto& row : rows) positions.push_back(row[0].as<std::int64_t>());
  std::sort(positions.begin(), positions.end());
  return positions;
}

std::int64_t append_change(pqxx::transaction_base& txn, const std::vector<std::string>& destinations,
                           const std::string& partition_key, const std::string& event_key,
                           const std::string& payload_json) {
  return append_changes(txn, destinations, {{partition_key, event_key, payload_json}}).front();
}

std::vector<std::int64_t> append_backlog(pqxx::transaction_base& txn, const std::vector<std::string>& destinations,
                                         int count, int keys) {
  std::vector<Change> changes;
  changes.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    changes.push_back({"acct-" + std::to_string(i % keys), "tx-" + std::to_string(i) + ":1",
                       "{\"n\": " + std::to_string(i) + "}"});
  }
  return append_changes(txn, destinations, changes);
}

void register_destinations(pqxx::transaction_base& txn, const std::vector<std::string>& destinations) {
  txn.exec_params("SELECT tidemark_register_destinations($1::text[])", pipeline::db::text_array_literal(destinations));
}

void ingest(pqxx::transaction_base& txn, const std::vector<std::string>& destinations) {
  for (const auto& destination : destinations) txn.exec_params("SELECT tidemark_log_ingest($1)", destination);
}

void make_head_due(pqxx::transaction_base& txn, const std::string& destination, const std::string& partition_key) {
  txn.exec_params(
      "UPDATE tidemark_cursor SET head_due_at = now() WHERE destination = $1 AND partition_key = $2 "
      "AND head_sequence IS NOT NULL",
      destination, partition_key);
}

std::int64_t outbox_id(pqxx::transaction_base& txn, std::int64_t position, const std::string& destination) {
  const auto rows =
      txn.exec_params("SELECT $1::bigint * 1024 + number FROM tidemark_destination WHERE name = $2", position, destination);
  if (rows.empty()) throw std::runtime_error("destination " + destination + " is not registered");
  return rows[0][0].as<std::int64_t>();
}

}  // namespace tidemark::testing
