#pragma once
// What a materialized view is (docs/rules.md rules 13-17, docs/views.md): versioned tables
// NAME_v<N>, listed in the `views` registry table, fed by the outbox events of the
// destination NAME. A view says how one event changes a version's table and how a new
// version is filled; admin.hpp versions, rebuilds and drops every view the same way.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <pqxx/pqxx>

#include "pipeline/core/error.hpp"
#include "pipeline/core/sink.hpp"

namespace tidemark::pipeline::views {

// A request that cannot be carried out as asked (unknown view, existing version, unsafe
// retention): the CLI reports it as a usage error.
struct ViewError : tidemark::Error {
  explicit ViewError(const std::string& message) : tidemark::Error(tidemark::ErrorKind::kUsage, message) {}
};

// "account_balance_v2": the table of one version, and the inbox consumer of daily_totals.
std::string table_name(const std::string& view, int version);

// A sql/views/ statement for one version's table. Table names cannot be parameters; they
// are built from a known view name and an integer only.
std::string statement(std::string_view query, const std::string& table);

// The fields of an outbox payload that the views read.
struct ViewEvent {
  std::int64_t outbox_id = 0;
  std::string event_id;
  std::string partition_key;  // the account, or the transaction id when it has none
  std::int64_t sequence = 0;
  std::string transaction_id;
  std::int64_t source_revision = 0;
  std::string amount;
  std::optional<std::string> previous_amount;
  std::optional<std::string> previous_account_id;
  std::optional<std::string> occurred_at;
};

// nullopt when the payload lacks a field the views need (such an event is dead: no retry
// can fix it): parse_entity_event, then to_view_event (entity_event.hpp).
std::optional<ViewEvent> parse_view_event(const OutboxEvent& event);

enum class ApplyOutcome {
  kApplied,
  kAlreadyApplied,  // a redelivery, dropped by the version filter or the inbox
  kGap,             // an earlier event of the same key is not applied yet
};

// Where the events applied to a version come from.
enum class Feed {
  kLive,     // the relay, or a rebuild's catch-up after a snapshot: a gap is an event not applied yet
  kHistory,  // a rebuild's replay of the whole history: a gap is permanent, the events after it count
};

class View {
 public:
  virtual ~View() = default;
  // The destination name, and the prefix of its tables.
  virtual std::string_view name() const = 0;
  // The entity whose changes it reads ("transaction" for the views Tidemark ships): the view
  // sink refuses an event of any other as dead.
  virtual std::string_view entity() const = 0;
  // Creates one version's tables (statements with the {table} placeholder).
  virtual std::string_view create_statement() const = 0;
  // Applies `event` to the version whose table is `table`, inside `txn`.
  virtual ApplyOutcome apply(pqxx::transaction_base& txn, const std::string& table, const ViewEvent& event,
                             Feed feed) const = 0;
  // Drops a retired version's tables ({table}).
  virtual std::string_view drop_statement() const = 0;
  // Fills a new version's table from transaction_state, in the rebuild's REPEATABLE READ
  // transaction ({table}); nullopt when the state cannot give the view's content.
  virtual std::optional<std::string_view> snapshot_statement() const = 0;
  // The outbox rows a new version replays once it is registered, oldest first: (id,
  // idempotency_key, partition_key, sequence, payload), $1 the view's destination.
  virtual std::string replay_query(const std::string& table) const = 0;
};

}  // namespace tidemark::pipeline::views
