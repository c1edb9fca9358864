#include "pipeline/store/outbox.hpp"

#include "pipeline/core/error_text.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline::relay {

std::vector<OutboxEntry> list_outbox(pqxx::connection& connection, const OutboxFilter& filter) {
  pqxx::read_transaction txn(connection);
  const auto rows = txn.exec_params(std::string(sql::kRelayList),
                                    filter.status ? filter.status->c_str() : nullptr,
                                    filter.destination ? filter.destination->c_str() : nullptr,
                                    static_cast<long long>(filter.limit), filter.after_id);
  std::vector<OutboxEntry> entries;
  entries.reserve(rows.size());
  for (const auto& row : rows) {
    OutboxEntry entry;
    entry.id = row[0].as<std::int64_t>();
    entry.destination = row[1].as<std::string>();
    entry.status = row[2].as<std::string>();
    entry.attempts = row[3].as<int>();
    entry.idempotency_key = row[4].as<std::string>();
    entry.next_attempt_at = row[5].as<std::string>();
    entry.last_error = redact_urls(row[6].as<std::string>());  // rows recorded before redaction too
    entry.delivered_at = row[7].as<std::string>();
    if (!row[8].is_null()) entry.partition_key = row[8].as<std::string>();
    if (!row[9].is_null()) entry.sequence = row[9].as<std::int64_t>();
    entry.created_at = row[10].as<std::string>();
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::optional<OutboxEntry> find_outbox_event(pqxx::connection& connection, std::int64_t id) {
  // The list's own statement: the first event after id - 1 is `id` itself when it exists.
  OutboxFilter filter;
  filter.after_id = id - 1;
  filter.limit = 1;
  auto entries = list_outbox(connection, filter);
  if (entries.empty() || entries.front().id != id) return std::nullopt;
  return std::move(entries.front());
}

void notify_relays(pqxx::transaction_base& txn) { txn.exec(std::string("NOTIFY ") + kOutboxChannel); }

bool retry_outbox_event(pqxx::connection& connection, std::int64_t id, RetryScope scope) {
  pqxx::work txn(connection);
  const auto rows = txn.exec_params(std::string(sql::kRelayRetryOne), id,
                                    scope == RetryScope::kDeadOnly ? "{dead}" : "{pending,dead}");
  if (!rows.empty()) notify_relays(txn);
  txn.commit();
  return !rows.empty();
}

std::size_t retry_dead_outbox_events(pqxx::connection& connection) {
  pqxx::work txn(connection);
  const auto rows = txn.exec(std::string(sql::kRelayRetryAllDead));
  if (!rows.empty()) notify_relays(txn);
  txn.commit();
  return static_cast<std::size_t>(rows.affected_rows());
}

}  // namespace tidemark::pipeline::relay
