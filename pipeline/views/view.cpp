#include "pipeline/views/view.hpp"

#include <boost/json.hpp>

namespace tidemark::pipeline::views {

namespace {

std::optional<std::string> optional_string(const boost::json::object& object, const char* key) {
  const auto* value = object.if_contains(key);
  if (value == nullptr || value->is_null()) return std::nullopt;
  if (const auto* text = value->if_string()) return std::string(*text);
  return std::nullopt;
}

std::optional<std::int64_t> optional_integer(const boost::json::object& object, const char* key) {
  const auto* value = object.if_contains(key);
  if (value == nullptr) return std::nullopt;
  if (value->is_int64()) return value->as_int64();
  if (value->is_uint64()) return static_cast<std::int64_t>(value->as_uint64());
  return std::nullopt;
}

}  // namespace

std::string table_name(const std::string& view, int version) { return view + "_v" + std::to_string(version); }

std::string statement(std::string_view query, const std::string& table) {
  std::string text(query);
  const std::string placeholder = "{table}";
  for (auto at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at + table.size())) {
    text.replace(at, placeholder.size(), table);
  }
  return text;
}

std::optional<ViewEvent> parse_view_event(const OutboxEvent& event) {
  boost::system::error_code error;
  const auto json = boost::json::parse(event.payload, error);
  if (error || !json.is_object()) return std::nullopt;
  const auto& object = json.as_object();
  ViewEvent view_event;
  view_event.outbox_id = event.id;
  view_event.event_id = event.idempotency_key;
  view_event.partition_key = event.partition_key;
  view_event.sequence = event.sequence;
  auto transaction_id = optional_string(object, "transaction_id");
  auto amount = optional_string(object, "amount");
  auto revision = optional_integer(object, "source_revision");
  if (!transaction_id || !amount || !revision || event.partition_key.empty() || event.sequence <= 0) {
    return std::nullopt;
  }
  view_event.transaction_id = std::move(*transaction_id);
  view_event.amount = std::move(*amount);
  view_event.source_revision = *revision;
  view_event.previous_amount = optional_string(object, "previous_amount");
  view_event.previous_account_id = optional_string(object, "previous_account_id");
  view_event.occurred_at = optional_string(object, "occurred_at");
  return view_event;
}

}  // namespace tidemark::pipeline::views
