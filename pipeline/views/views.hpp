#pragma once
// Materialized views fed by the outbox (DESIGN rules 13-17, docs/views.md). Two views ship
// with Tidemark, each kept in versioned tables NAME_v<N> listed in the `views` registry:
//   account_balance  per-account deltas, deduplicated by the version filter on the
//                    per-account sequence (needs per-account order; refuses gaps);
//   daily_totals     per-day deltas, deduplicated through the inbox (consumer = table name).
// Every version that is not retired receives the live events.
#include <cstdint>
#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "app/config/config.hpp"
#include "pipeline/core/sink.hpp"

namespace tidemark::pipeline::views {

// A request that cannot be carried out as asked (unknown view, existing version, unsafe
// retention): the CLI reports it as a usage error.
struct ViewError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline constexpr char kAccountBalance[] = "account_balance";
inline constexpr char kDailyTotals[] = "daily_totals";

bool is_known_view(const std::string& name);
// "account_balance_v2": the table of one version, and the inbox consumer of daily_totals.
std::string table_name(const std::string& view, int version);

// The fields of an outbox payload that the views read.
struct ViewEvent {
  std::int64_t outbox_id = 0;
  std::string destination;
  std::string event_id;
  std::string partition_key;  // the account, or the transaction id when it has none
  std::int64_t sequence = 0;
  std::string transaction_id;
  std::int64_t source_revision = 0;
  std::string amount;
  std::optional<std::string> previous_amount;
  std::optional<std::string> previous_account_id;
  std::optional<std::string> occurred_at;
  std::optional<std::string> previous_occurred_at;
};

// nullopt when the payload lacks a field the views need (such an event is dead: no retry
// can fix it).
std::optional<ViewEvent> parse_view_event(const relay::OutboxEvent& event);

enum class ApplyOutcome {
  kApplied,
  kAlreadyApplied,  // a redelivery, dropped by the version filter or the inbox
  kGap,             // account_balance: an earlier event of the account is not applied yet
};

// Applies `event` to one version of `view` inside `txn`.
ApplyOutcome apply_event(pqxx::transaction_base& txn, const std::string& view, int version, const ViewEvent& event);

// The versions of `view` that receive events (building and live), locked FOR SHARE so that
// a concurrent drop waits for this transaction.
std::vector<int> receiving_versions(pqxx::transaction_base& txn, const std::string& view);

// Creates version 1 (live, empty) of each view in `names` that has no version yet. A view
// destination configured from the first load on sees every event from sequence 1.
void ensure_first_versions(pqxx::connection& connection, const std::vector<std::string>& names);

struct ViewVersion {
  std::string name;
  int version = 0;
  std::string status;  // building | live | retired
  std::string position;
  std::string created_at;
  double lag_seconds = 0;  // age of the oldest event of the view not yet applied (pending or dead)
  std::int64_t pending = 0;
  std::int64_t dead = 0;  // events the relay gave up on: the view misses them until retried or rebuilt
};

std::vector<ViewVersion> list_views(pqxx::connection& connection);

// How a view is filled by rebuild_view.
enum class RebuildSource {
  kSnapshot,     // account_balance only: transaction_state and the view's sequences, then the events after
  kFullHistory,  // every event of the view's destination still in the outbox
};

// kSnapshot when `feeders` (the pipelines that list the view, from the config) include every
// pipeline whose changes are in transaction_state: only then does the state hold nothing the
// view never received. Otherwise, and always for daily_totals, kFullHistory.
RebuildSource rebuild_source(pqxx::connection& connection, const std::string& view,
                             const std::vector<std::string>& feeders);

// Creates NAME_v<version> and fills it from `source` while the other versions keep serving,
// then marks it live. A snapshot is one REPEATABLE READ transaction that registers the
// version; full history replays the outbox (daily_totals through its own inbox). Live
// events reach it from the moment it is registered. Returns the number of rows of the new
// version. ViewError when the version exists.
std::int64_t rebuild_view(const std::string& database_url, const std::string& view, int version,
                          RebuildSource source);

// Retires one version: drops its table and its inbox rows. ViewError when it is the last
// version receiving events, or does not exist.
void drop_view(pqxx::connection& connection, const std::string& view, int version);

// The longest time after an event was first applied that the relay may deliver it again:
// every retry delay at its cap, plus one lease per attempt (a relay that died mid-attempt).
Duration redelivery_horizon(const RelayConfig& config, Duration lease);

// How long inbox rows are kept unless told otherwise (serve's hourly cleanup, `views cleanup`).
inline constexpr std::chrono::hours kDefaultInboxRetention{168};

// Deletes inbox rows older than `retention`; ViewError when `retention` does not exceed
// redelivery_horizon(config, lease) (DESIGN rule 16). Returns how many were deleted.
std::int64_t cleanup_inbox(pqxx::connection& connection, Duration retention, const RelayConfig& config,
                           Duration lease);

// An account's row in the newest live version of account_balance.
struct AccountBalance {
  int view_version = 0;
  std::string balance = "0";  // numeric as text; "0" before the account's first event
  std::int64_t sequence = 0;  // the account's last applied sequence (0 before its first)
  std::string updated_at;     // empty before the account's first event
};

// nullopt when account_balance has no live version.
std::optional<AccountBalance> read_account_balance(pqxx::connection& connection, const std::string& account_id);

// tidemark_view_lag_seconds and tidemark_view_dead_events, per view in `names`.
struct ViewHealth {
  double lag_seconds = 0;  // age of its oldest event not yet applied, pending or dead (0 when none)
  std::int64_t dead = 0;   // its dead events
};
std::map<std::string, ViewHealth> view_health(pqxx::connection& connection, const std::vector<std::string>& names);

}  // namespace tidemark::pipeline::views
