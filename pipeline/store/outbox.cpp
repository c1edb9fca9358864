#include "pipeline/store/outbox.hpp"

#include "pipeline/core/error_text.hpp"
#include "pipeline/core/sink.hpp"
#include "pipeline/store/pg/row.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline {

std::vector<OutboxEntry> list_outbox(pqxx::connection& connection, const OutboxFilter& filter) {
  pqxx::read_transaction txn(connection);
  const auto rows = txn.exec_params(std::string(sql::kRelayList),
                                    filter.status ? filter.status->c_str() : nullptr,
                                    filter.destination ? filter.destination->c_str() : nullptr,
                                    static_cast<long long>(filter.limit), filter.after_id);
  std::vector<OutboxEntry> entries;
  entries.reserve(rows.size());
  for (const auto& listed : rows) {
    const db::Row row(listed);
    OutboxEntry entry;
    entry.id = row.get<std::int64_t>("id");
    entry.destination = row.get<std::string>("destination");
    entry.status = row.get<std::string>("status");
    entry.attempts = row.get<int>("attempts");
    entry.idempotency_key = row.get<std::string>("idempotency_key");
    entry.next_attempt_at = row.get<std::string>("next_attempt_at");
    entry.last_error = redact_urls(row.get<std::string>("last_error"));  // rows recorded before redaction too
    entry.delivered_at = row.get<std::string>("delivered_at");
    if (auto partition_key = row.optional<std::string>("partition_key")) entry.partition_key = std::move(*partition_key);
    if (auto sequence = row.optional<std::int64_t>("sequence")) entry.sequence = *sequence;
    entry.created_at = row.get<std::string>("created_at");
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

}  // namespace tidemark::pipeline
