#pragma once
// The versions of every view (docs/rules.md rules 13-17, docs/views.md): each kept in versioned
// tables NAME_v<N> listed in the `views` registry table; every version that is not retired
// receives the live events. Rebuild, drop, inbox cleanup and lag work the same way for
// every view; what differs is the View's (view.hpp).
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "pipeline/core/sink.hpp"
#include "pipeline/store/pg/database.hpp"
#include "pipeline/views/view.hpp"

namespace tidemark::pipeline::views {

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
  kSnapshot,     // the view's snapshot of transaction_state and its sequences, then the events after
  kFullHistory,  // every event of the view's destination still in the outbox
};

// kSnapshot when the view can start from a snapshot (account_balance) and `feeders` (the
// pipelines that list the view, from the config) include every pipeline whose changes are in
// transaction_state: only then does the state hold nothing the view never received.
// Otherwise kFullHistory.
RebuildSource rebuild_source(pqxx::connection& connection, const std::string& view,
                             const std::vector<std::string>& feeders);

// Creates NAME_v<version> and fills it from `source` while the other versions keep serving,
// then marks it live. A snapshot is one REPEATABLE READ transaction that registers the
// version; full history replays the outbox (daily_totals through its own inbox). Live
// events reach it from the moment it is registered. Returns the number of rows of the new
// version. ViewError when the view is unknown or the version exists. Runs on a session of its
// own (Database::connect), which holds the view's lock from the registration to the end.
std::int64_t rebuild_view(const db::Database& database, const std::string& view, int version,
                          RebuildSource source);

// Retires one version: drops its table and its inbox rows. ViewError when it is the last
// version receiving events, or does not exist.
void drop_view(pqxx::connection& connection, const std::string& view, int version);

// The relay's schedule, as far as how late it may deliver an event again.
struct Redelivery {
  int max_attempts = 10;
  Duration base_delay = std::chrono::seconds(1);
  Duration max_delay = std::chrono::minutes(5);
  Duration lease = std::chrono::seconds(30);  // one per attempt: a relay that died mid-attempt
};

// The longest time after an event was first applied that the relay may deliver it again:
// every retry delay at its cap, plus one lease per attempt (a relay that died mid-attempt).
Duration redelivery_horizon(const Redelivery& relay);

// How long inbox rows are kept unless told otherwise (serve's hourly cleanup, `views cleanup`).
inline constexpr std::chrono::hours kDefaultInboxRetention{168};

// Inbox rows deleted per transaction by cleanup_inbox: no lock is held for long.
inline constexpr std::int64_t kInboxCleanupChunk = 5000;

// Deletes inbox rows older than `retention`, oldest first, at most `chunk` per transaction,
// calling `on_chunk` with each committed chunk's count; ViewError when `retention` does not
// exceed redelivery_horizon(relay) (docs/rules.md rule 16). Returns how many were deleted.
std::int64_t cleanup_inbox(pqxx::connection& connection, Duration retention, const Redelivery& relay,
                           const std::function<void(std::int64_t)>& on_chunk = {},
                           std::int64_t chunk = kInboxCleanupChunk);

// tidemark_view_lag_seconds and tidemark_view_dead_events, per view in `names`.
struct ViewHealth {
  double lag_seconds = 0;  // age of its oldest event not yet applied, pending or dead (0 when none)
  std::int64_t dead = 0;   // its dead events
};
std::map<std::string, ViewHealth> view_health(pqxx::connection& connection, const std::vector<std::string>& names);

}  // namespace tidemark::pipeline::views
