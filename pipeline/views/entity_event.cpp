#include "pipeline/views/entity_event.hpp"

#include <string_view>

#include <boost/json.hpp>

#include "pipeline/core/entity.hpp"

namespace tidemark::pipeline::views {

namespace {

std::optional<boost::json::object> parse_object(const std::string& payload) {
  boost::system::error_code error;
  auto json = boost::json::parse(payload, error);
  if (error || !json.is_object()) return std::nullopt;
  return std::move(json.as_object());
}

std::optional<std::string> optional_string(const boost::json::object& object, std::string_view key) {
  const auto* value = object.if_contains(key);
  if (value == nullptr) return std::nullopt;
  if (const auto* text = value->if_string()) return std::string(*text);
  return std::nullopt;
}

// Boost.JSON keeps an integer that fits 64 bits as an integer: a revision (0 ... 2^63-1) is an
// int64. A fraction, an exponent or a wider number would be a double, and is no revision.
std::optional<std::int64_t> optional_integer(const boost::json::object& object, std::string_view key) {
  const auto* value = object.if_contains(key);
  if (value == nullptr) return std::nullopt;
  if (const auto* integer = value->if_int64()) return *integer;
  return std::nullopt;
}

// What the envelope says of the change: whose, which key, which revision.
struct Envelope {
  std::string entity;
  std::string key;
  std::int64_t revision = 0;
  bool legacy = false;
};

std::optional<Envelope> read_envelope(const boost::json::object& object) {
  if (object.contains("entity")) {
    auto entity = optional_string(object, "entity");
    auto key = optional_string(object, "key");
    const auto revision = optional_integer(object, "revision");
    if (!entity || entity->empty() || !key || !revision) return std::nullopt;
    return Envelope{.entity = std::move(*entity), .key = std::move(*key), .revision = *revision, .legacy = false};
  }
  // The legacy envelope names the key and the revision as the built-in declaration does.
  const auto& built_in = built_in_transaction_entity();
  auto key = optional_string(object, built_in.key);
  const auto revision = optional_integer(object, built_in.revision);
  if (!key || !revision) return std::nullopt;
  return Envelope{.entity = built_in.name, .key = std::move(*key), .revision = *revision, .legacy = true};
}

}  // namespace

std::optional<EntityEvent> parse_entity_event(const OutboxEvent& event) {
  const auto object = parse_object(event.payload);
  if (!object) return std::nullopt;
  auto envelope = read_envelope(*object);
  if (!envelope) return std::nullopt;
  return EntityEvent{.outbox_id = event.id,
                     .event_id = event.idempotency_key,
                     .partition_key = event.partition_key,
                     .sequence = event.sequence,
                     .entity = std::move(envelope->entity),
                     .key = std::move(envelope->key),
                     .revision = envelope->revision,
                     .legacy = envelope->legacy,
                     .payload = event.payload};
}

std::optional<ViewEvent> to_view_event(const EntityEvent& event) {
  if (!event.legacy || event.partition_key.empty() || event.sequence <= 0) return std::nullopt;
  const auto object = parse_object(event.payload);
  if (!object) return std::nullopt;
  auto amount = optional_string(*object, "amount");
  if (!amount) return std::nullopt;
  return ViewEvent{.outbox_id = event.outbox_id,
                   .event_id = event.event_id,
                   .partition_key = event.partition_key,
                   .sequence = event.sequence,
                   .transaction_id = event.key,
                   .source_revision = event.revision,
                   .amount = std::move(*amount),
                   .previous_amount = optional_string(*object, "previous_amount"),
                   .previous_account_id = optional_string(*object, "previous_account_id"),
                   .occurred_at = optional_string(*object, "occurred_at")};
}

}  // namespace tidemark::pipeline::views
