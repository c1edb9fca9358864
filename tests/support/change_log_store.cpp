#include "tests/support/change_log_store.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "pipeline/store/pg/pg_text.hpp"
#include "sql/statements.hpp"
#include "tests/support/change_log.hpp"

namespace tidemark::testing {

namespace {

constexpr std::int64_t kRound = 1000;     // events claimed per round
constexpr std::int64_t kLeaseMs = 60000;  // long enough that no claim of a round runs out

}  // namespace

std::vector<ClaimedEvent> claim(pqxx::connection& connection, const std::vector<std::string>& destinations,
                                const std::vector<ClaimedEvent>& delivered, std::int64_t limit) {
  std::vector<std::int64_t> ids;
  std::vector<std::int64_t> attempts;
  for (const auto& event : delivered) {
    ids.push_back(event.id);
    attempts.push_back(event.attempt);
  }
  const std::vector<std::int64_t> limits(destinations.size(), limit);
  pqxx::work txn(connection);
  const auto rows = txn.exec_params(std::string(sql::kRelayClaim), pipeline::db::text_array_literal(destinations),
                                    pipeline::db::bigint_array_literal(limits), limit, kLeaseMs,
                                    pipeline::db::bigint_array_literal(ids), pipeline::db::bigint_array_literal(attempts));
  txn.commit();
  std::vector<ClaimedEvent> claimed;
  for (const auto& row : rows) {
    ClaimedEvent& event = claimed.emplace_back();
    event.id = row[0].as<std::int64_t>();
    event.destination = row[1].as<std::string>();
    event.idempotency_key = row[2].as<std::string>();
    if (!row[3].is_null()) event.partition_key = row[3].as<std::string>();
    if (!row[4].is_null()) event.sequence = row[4].as<std::int64_t>();
    event.payload = row[5].as<std::string>();
    event.attempt = row[6].as<int>();
  }
  return claimed;
}

std::vector<ClaimedEvent> deliver_all(pqxx::connection& connection, const std::vector<std::string>& destinations) {
  std::vector<ClaimedEvent> sent;
  std::vector<ClaimedEvent> in_flight = claim(connection, destinations);
  while (!in_flight.empty()) {
    sent.insert(sent.end(), in_flight.begin(), in_flight.end());
    in_flight = claim(connection, destinations, in_flight);
  }
  return sent;
}

std::int64_t append_aged_change(pqxx::transaction_base& txn, const std::string& destination, const std::string& key,
                                const std::string& age) {
  const std::int64_t position = append_change(txn, {destination}, key, key, "{}");
  txn.exec_params("UPDATE tidemark_change SET created_at = now() - $1::interval WHERE position = $2", age, position);
  return position;
}

std::int64_t settle_due(pqxx::connection& connection, const std::string& destination, Settlement settlement,
                        std::int64_t max_events, const std::string& error) {
  std::int64_t settled = 0;
  // Deliveries are recorded by the next claim, as the relay records them.
  std::vector<ClaimedEvent> delivered;
  while (true) {
    const std::int64_t room = max_events < 0 ? kRound : std::min(kRound, max_events - settled);
    const std::vector<ClaimedEvent> claimed = claim(connection, {destination}, delivered, room);
    delivered.clear();
    if (claimed.empty()) return settled;
    settled += static_cast<std::int64_t>(claimed.size());
    if (settlement == Settlement::kDelivered) {
      delivered = claimed;
      continue;
    }
    pqxx::work mark(connection);
    for (const auto& event : claimed) {
      mark.exec_params("SELECT tidemark_relay_mark_failed($1, $2, 'dead', 0, $3)", event.id, event.attempt, error);
    }
    mark.commit();
  }
}

void mark_delivered(pqxx::transaction_base& txn, const std::string& destination, std::int64_t position) {
  ingest(txn, {destination});
  const pqxx::result moved = txn.exec_params(R"SQL(
    WITH next AS (
      SELECT c.partition_key, c.key_sequence,
             (SELECT min(n.key_sequence) FROM tidemark_change n
               WHERE n.partition_key = c.partition_key AND n.key_sequence > c.key_sequence
                 AND $1 = ANY (n.destinations)) AS head
        FROM tidemark_change c
       WHERE c.position = $2 AND $1 = ANY (c.destinations)
    )
    UPDATE tidemark_cursor k
       SET through = next.key_sequence, last_sequence = k.last_sequence + 1, head_sequence = next.head,
           head_due_at = CASE WHEN next.head IS NOT NULL THEN now() END, head_attempts = 0,
           head_leased = false, last_error = NULL, advanced_at = now()
      FROM next
     WHERE k.destination = $1 AND k.partition_key = next.partition_key AND k.head_sequence = next.key_sequence
       AND NOT k.head_leased
    RETURNING 1)SQL",
                                             destination, position);
  if (moved.empty()) {
    throw std::runtime_error("change " + std::to_string(position) + " is not the next of its key for " + destination);
  }
}

void redeliver_everything(pqxx::transaction_base& txn, const std::string& destination) {
  txn.exec_params("DELETE FROM tidemark_delivery_attempts WHERE destination = $1", destination);
  txn.exec_params(R"SQL(
    UPDATE tidemark_cursor k
       SET through = 0, last_sequence = 0,
           head_sequence = (SELECT min(c.key_sequence) FROM tidemark_change c
                             WHERE c.partition_key = k.partition_key AND k.destination = ANY (c.destinations)),
           head_due_at = now(), head_attempts = 0, head_leased = false, last_error = NULL
     WHERE k.destination = $1)SQL",
                  destination);
}

}  // namespace tidemark::testing
