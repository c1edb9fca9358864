#pragma once
// The event a view reads: one change of an entity as the change log delivers it, in either
// envelope (docs/entities.md, pipeline/store/entity_sql.cpp): a declared entity's {entity,
// key, revision, partition, fields, previous}, or the built-in entity's legacy flat one
// (transaction_id, source_revision, each field and previous_<field>). The views Tidemark
// ships read the built-in entity's fields as a ViewEvent (to_view_event).
#include <cstdint>
#include <optional>
#include <string>

#include "pipeline/core/sink.hpp"
#include "pipeline/views/view.hpp"

namespace tidemark::pipeline::views {

struct EntityEvent {
  std::int64_t outbox_id = 0;
  std::string event_id;       // the outbox row's idempotency key
  std::string partition_key;  // "" when the row has none
  std::int64_t sequence = 0;  // per (destination, partition); 0 when the row has none
  std::string entity;         // the payload's "entity"; "transaction" for the legacy envelope
  std::string key;            // "key", or the legacy transaction_id
  std::int64_t revision = 0;  // "revision", or the legacy source_revision
  bool legacy = false;        // the built-in entity's flat envelope
  std::string payload;        // the JSON text as received: what a view reads its fields from
};

// nullopt when the payload is neither envelope: not a JSON object, or without a text entity
// (a declared entity's) or a text key and an integer revision. The revision is read as the
// integer it is written as, never through a double: any other number is no revision.
std::optional<EntityEvent> parse_entity_event(const OutboxEvent& event);

// The fields account_balance and daily_totals read, from an event of the built-in entity's
// legacy envelope; nullopt for any other event, or one without an amount, a partition or a
// sequence (no retry can give it one).
std::optional<ViewEvent> to_view_event(const EntityEvent& event);

}  // namespace tidemark::pipeline::views
