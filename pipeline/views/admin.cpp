#include "pipeline/views/admin.hpp"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "pipeline/core/backoff.hpp"
#include "pipeline/core/duration.hpp"
#include "pipeline/store/pg/database.hpp"
#include "pipeline/store/pg/pg_text.hpp"
#include "pipeline/store/pg/row.hpp"
#include "pipeline/views/registry.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline::views {

namespace {

constexpr std::size_t kReplayBatch = 1000;  // events per transaction when replaying the outbox

bool version_exists(pqxx::transaction_base& txn, const std::string& view, int version) {
  return !txn.exec_params(std::string(sql::kViewsVersionExists), view, version).empty();
}

// Replays the outbox rows of `query` (see View::replay_query) into one version,
// kReplayBatch per transaction. Returns how many were applied.
std::int64_t replay(pqxx::connection& connection, const View& view, int version, const std::string& query,
                    Feed feed) {
  const std::string name(view.name());
  std::vector<ViewEvent> events;
  {
    pqxx::read_transaction txn(connection);
    for (const auto& replayed : txn.exec_params(query, name)) {
      const db::Row row(replayed);
      OutboxEvent outbox;
      outbox.id = row.get<std::int64_t>("id");
      outbox.destination = name;
      outbox.idempotency_key = row.get<std::string>("idempotency_key");
      outbox.partition_key = row.text("partition_key");
      outbox.sequence = row.optional<std::int64_t>("sequence").value_or(0);
      outbox.payload = row.get<std::string>("payload");
      if (auto event = parse_view_event(outbox)) events.push_back(std::move(*event));
    }
  }
  std::int64_t applied = 0;
  const std::string table = table_name(name, version);
  for (std::size_t start = 0; start < events.size(); start += kReplayBatch) {
    // The relay applies live events to the same rows meanwhile: each chunk first waits for
    // the applies in progress and holds the next ones back (lock_for_replay.sql). A chunk that
    // fails anyway (a lost connection) rolls back whole and is applied again, which the version
    // filter and the inbox make safe.
    std::int64_t chunk_applied = 0;
    db::with_retries({}, "replaying events into " + table, [&] {
      chunk_applied = 0;
      pqxx::work txn(connection);
      txn.exec_params(std::string(sql::kViewsLockForReplay), name);
      for (std::size_t i = start; i < std::min(events.size(), start + kReplayBatch); ++i) {
        if (view.apply(txn, table, events[i], feed) == ApplyOutcome::kApplied) ++chunk_applied;
      }
      txn.commit();
    });
    applied += chunk_applied;
  }
  return applied;
}

// The view's lock (lock_view.sql) held by the connection's session from construction to
// destruction, around a REPEATABLE READ transaction: one that took it as its first statement
// would read from a snapshot taken before it waited.
class SessionLock {
 public:
  SessionLock(pqxx::connection& connection, std::string view) : connection_(connection), view_(std::move(view)) {
    pqxx::nontransaction txn(connection_);
    txn.exec_params(std::string(sql::kViewsLockViewSession), view_);
    txn.commit();
  }
  ~SessionLock() {
    try {
      pqxx::nontransaction txn(connection_);
      txn.exec_params(std::string(sql::kViewsUnlockViewSession), view_);
      txn.commit();
    } catch (const std::exception& error) {
      // The connection broke: the server released the lock with the session.
      spdlog::debug("releasing the lock of view {}: {}", view_, error.what());
    }
  }
  SessionLock(const SessionLock&) = delete;
  SessionLock& operator=(const SessionLock&) = delete;

 private:
  pqxx::connection& connection_;
  std::string view_;
};

// A replay of the whole history needs every event of the destination: once retention deleted
// some (docs/retention.md), the new version would be silently wrong, so the rebuild stops here.
// Under the view's lock, which retention's outbox chunks take too.
void refuse_trimmed_history(pqxx::transaction_base& txn, const View& known) {
  const std::string view(known.name());
  const auto rows = txn.exec_params(std::string(sql::kViewsTrimmedHistory), view);
  if (rows.empty()) return;
  const db::Row trimmed(rows[0]);
  throw ViewError("view " + view + " cannot be rebuilt from full history: retention deleted " +
                  trimmed.get<std::string>("deleted_rows") + " delivered events of destination " + view +
                  " (the latest delivered at " + trimmed.get<std::string>("newest_deleted_at") +
                  ", past retention.outbox), so a replay would miss them. Keep the live version" +
                  (known.snapshot_statement()
                       ? ", or rebuild from a snapshot (views rebuild --config, when every pipeline that writes "
                         "transaction_state lists the view)"
                       : "") +
                  "; docs/retention.md");
}

}  // namespace

std::vector<int> receiving_versions(pqxx::transaction_base& txn, const std::string& view) {
  std::vector<int> versions;
  for (const auto& row : txn.exec_params(
           std::string(sql::kViewsReceivingVersions), view)) {
    versions.push_back(db::Row(row).get<int>("version"));
  }
  return versions;
}

void ensure_first_versions(pqxx::connection& connection, const std::vector<std::string>& names) {
  for (const auto& name : names) {
    const View& view = known_view(name);
    pqxx::work txn(connection);
    // Serializes two processes starting at once; the second sees the first's version.
    txn.exec_params(std::string(sql::kViewsLockView), name);
    if (!txn.exec_params(std::string(sql::kViewsAnyVersion), name).empty()) continue;
    txn.exec(statement(view.create_statement(), table_name(name, 1)));
    txn.exec_params(
        std::string(sql::kViewsRegisterFirstVersion),
        name);
    txn.commit();
    spdlog::info("created view {} (empty; it receives every event from now on)", table_name(name, 1));
  }
}

std::vector<ViewVersion> list_views(pqxx::connection& connection) {
  pqxx::read_transaction txn(connection);
  std::vector<ViewVersion> versions;
  for (const auto& listed : txn.exec(std::string(sql::kViewsList))) {
    const db::Row row(listed);
    ViewVersion version;
    version.name = row.get<std::string>("name");
    version.version = row.get<int>("version");
    version.status = row.get<std::string>("status");
    version.position = row.get<std::string>("position");
    version.created_at = row.get<std::string>("created_at");
    version.lag_seconds = row.get<double>("lag_seconds");
    version.pending = row.get<std::int64_t>("pending");
    version.dead = row.get<std::int64_t>("dead");
    versions.push_back(std::move(version));
  }
  return versions;
}

RebuildSource rebuild_source(pqxx::connection& connection, const std::string& view,
                             const std::vector<std::string>& feeders) {
  const View* known = find_view(view);
  if (known == nullptr || !known->snapshot_statement() || feeders.empty()) return RebuildSource::kFullHistory;
  pqxx::read_transaction txn(connection);
  const std::string list = db::text_array_literal(feeders);
  const auto others = txn.exec_params(
      std::string(sql::kViewsOtherFeeders), list);
  return db::Row(others.at(0)).get<bool>("others_feed") ? RebuildSource::kFullHistory : RebuildSource::kSnapshot;
}

std::int64_t rebuild_view(const db::Database& database, const std::string& view_name, int version,
                          RebuildSource source) {
  const View& view = known_view(view_name);
  if (version < 1) throw ViewError("--version must be 1 or more");
  const std::string table = table_name(view_name, version);
  auto connection = database.connect();
  std::string position = "full history";
  {
    // Registering the version makes the relay feed it from now on. From a snapshot, the
    // same transaction fills it, and records the snapshot's position.
    const SessionLock lock(*connection, view_name);
    pqxx::transaction<pqxx::isolation_level::repeatable_read> txn(*connection);
    if (version_exists(txn, view_name, version)) {
      throw ViewError("view " + table + " already exists (versions are never reused); see `tidemark views list`");
    }
    const auto snapshot = view.snapshot_statement();
    const bool from_snapshot = source == RebuildSource::kSnapshot && snapshot;
    if (!from_snapshot) refuse_trimmed_history(txn, view);
    txn.exec(statement(view.create_statement(), table));
    if (from_snapshot) {
      position = db::Row(txn.exec(std::string(sql::kViewsSnapshotPosition)).at(0)).get<std::string>("snapshot");
      txn.exec(statement(*snapshot, table));
    }
    txn.exec_params(std::string(sql::kViewsRegisterVersion), view_name,
                    version, position);
    txn.commit();
  }
  // Events delivered to the older versions before this one was visible are still in the
  // outbox: the view replays those its table may not reflect (View::replay_query).
  // After a snapshot a gap means an event not yet applied (the relay brings it); in the
  // whole history it is permanent, and the events after it still count.
  const std::int64_t replayed = replay(*connection, view, version, view.replay_query(table),
                                       position == "full history" ? Feed::kHistory : Feed::kLive);
  pqxx::work txn(*connection);
  txn.exec_params(std::string(sql::kViewsMarkLive), view_name,
                  version);
  const auto rows = db::Row(txn.exec(statement(sql::kViewsCountRows, table)).at(0)).get<std::int64_t>("row_count");
  txn.commit();
  spdlog::info("view {} is live: {} rows, {} events replayed from the outbox", table, rows, replayed);
  return rows;
}

void drop_view(pqxx::connection& connection, const std::string& view, int version) {
  pqxx::work txn(connection);
  txn.exec_params(std::string(sql::kViewsLockView), view);
  const auto status = txn.exec_params(std::string(sql::kViewsVersionStatus), view, version);
  const std::string table = table_name(view, version);
  if (status.empty() || db::Row(status[0]).get<std::string>("status") == "retired") {
    throw ViewError("view " + table + " does not exist or is already retired; see `tidemark views list`");
  }
  const auto others = txn.exec_params(
      std::string(sql::kViewsOtherLiveVersions), view, version);
  if (db::Row(others.at(0)).get<std::int64_t>("live_versions") == 0) {
    throw ViewError("view " + table + " is the only live version of " + view +
                    "; rebuild another version first (`tidemark views rebuild " + view + " --version N`)");
  }
  // The UPDATE waits for sinks holding the row FOR SHARE, so no event is applied to the
  // table after it is gone.
  txn.exec_params(std::string(sql::kViewsRetireVersion), view,
                  version);
  txn.exec(statement(known_view(view).drop_statement(), table));
  txn.exec_params(std::string(sql::kViewsForgetInbox), table);
  txn.commit();
}

Duration redelivery_horizon(const Redelivery& relay) {
  Duration horizon = relay.lease * relay.max_attempts;
  for (int attempt = 1; attempt < relay.max_attempts; ++attempt) {
    horizon += backoff_ceiling(relay.base_delay, relay.max_delay, attempt);
  }
  return horizon;
}

std::int64_t cleanup_inbox(pqxx::connection& connection, Duration retention, const Redelivery& relay,
                           const std::function<void(std::int64_t)>& on_chunk, std::int64_t chunk) {
  const Duration horizon = redelivery_horizon(relay);
  if (retention <= horizon) {
    throw ViewError("inbox retention " + format_duration(retention) +
                    " is not longer than the relay's longest redelivery window (" + format_duration(horizon) +
                    ": every retry delay at relay.max_delay plus one lease per attempt, over relay.max_attempts); "
                    "a redelivered event would be applied twice. Use a longer --retention");
  }
  return db::delete_in_chunks(connection, sql::kRetentionInboxChunk, retention, chunk, on_chunk);
}

std::map<std::string, ViewHealth> view_health(pqxx::connection& connection, const std::vector<std::string>& names) {
  const std::string array = db::text_array_literal(names);
  pqxx::read_transaction txn(connection);
  std::map<std::string, ViewHealth> health;
  for (const auto& listed : txn.exec_params(std::string(sql::kViewsLag), array)) {
    const db::Row row(listed);
    health[row.get<std::string>("name")] = ViewHealth{row.get<double>("lag_seconds"), row.get<std::int64_t>("dead")};
  }
  return health;
}

}  // namespace tidemark::pipeline::views
