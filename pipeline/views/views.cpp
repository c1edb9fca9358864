#include "pipeline/views/views.hpp"

#include <algorithm>

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "pipeline/core/backoff.hpp"
#include "pipeline/store/pg/database.hpp"
#include "pipeline/store/pg/pg_text.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline::views {

namespace {

constexpr std::size_t kReplayBatch = 1000;  // events per transaction when replaying the outbox

// A sql/views/ statement for one version's table. Table names cannot be parameters; they
// are built from a known view name and an integer only.
std::string statement(std::string_view query, const std::string& table) {
  std::string text(query);
  const std::string placeholder = "{table}";
  for (auto at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at + table.size())) {
    text.replace(at, placeholder.size(), table);
  }
  return text;
}

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

// over_gaps: a rebuild's replay of the whole history, where a gap is permanent (see
// account_balance_apply_over_gap.sql); the live feed never applies over one.
ApplyOutcome apply_account_balance(pqxx::transaction_base& txn, const std::string& table, const ViewEvent& event,
                                   bool over_gaps) {
  const std::string previous_partition = event.previous_account_id.value_or(event.transaction_id);
  // A revision that moved the transaction to another account adds its whole amount here and
  // takes the previous amount off the old account.
  const bool moved = event.previous_amount && previous_partition != event.partition_key;
  const std::string offset = moved ? "0" : event.previous_amount.value_or("0");
  const std::string_view file = over_gaps               ? sql::kViewsAccountBalanceApplyOverGap
                                : event.sequence == 1 ? sql::kViewsAccountBalanceApply
                                                      : sql::kViewsAccountBalanceApplyNext;
  const auto applied =
      txn.exec_params(statement(file, table), event.partition_key, event.sequence, event.amount, offset);
  if (!applied.empty()) {
    if (moved) txn.exec_params(statement(sql::kViewsAccountBalanceMoveOut, table), previous_partition, *event.previous_amount);
    return ApplyOutcome::kApplied;
  }
  const auto current = txn.exec_params(statement(sql::kViewsAccountBalanceVersion, table), event.partition_key);
  if (!current.empty() && current[0][0].as<std::int64_t>() >= event.sequence) return ApplyOutcome::kAlreadyApplied;
  return ApplyOutcome::kGap;
}

ApplyOutcome apply_daily_totals(pqxx::transaction_base& txn, const std::string& table, const ViewEvent& event) {
  const auto applied = txn.exec_params(
      statement(sql::kViewsDailyTotalsApply, table), table, event.event_id, event.outbox_id, event.destination,
      event.transaction_id, event.source_revision, event.amount,
      event.occurred_at ? event.occurred_at->c_str() : nullptr,
      event.previous_amount ? event.previous_amount->c_str() : nullptr,
      event.previous_occurred_at ? event.previous_occurred_at->c_str() : nullptr,
      event.previous_account_id.value_or(event.transaction_id));
  return applied.empty() ? ApplyOutcome::kAlreadyApplied : ApplyOutcome::kApplied;
}

// The statement that creates a version's table of a known view.
std::string_view create_statement(const std::string& view) {
  return view == kAccountBalance ? sql::kViewsAccountBalanceCreate : sql::kViewsDailyTotalsCreate;
}

bool version_exists(pqxx::transaction_base& txn, const std::string& view, int version) {
  return !txn.exec_params(std::string(sql::kViewsVersionExists), view, version).empty();
}

// Replays outbox rows (id, idempotency_key, partition_key, sequence, payload) into one
// version, kReplayBatch per transaction. Returns how many were applied.
std::int64_t replay(pqxx::connection& connection, const std::string& view, int version, const std::string& query,
                    bool over_gaps) {
  std::vector<ViewEvent> events;
  {
    pqxx::read_transaction txn(connection);
    for (const auto& row : txn.exec_params(query, view)) {
      relay::OutboxEvent outbox;
      outbox.id = row[0].as<std::int64_t>();
      outbox.destination = view;
      outbox.idempotency_key = row[1].as<std::string>();
      outbox.partition_key = row[2].is_null() ? std::string() : row[2].as<std::string>();
      outbox.sequence = row[3].is_null() ? 0 : row[3].as<std::int64_t>();
      outbox.payload = row[4].as<std::string>();
      if (auto event = parse_view_event(outbox)) events.push_back(std::move(*event));
    }
  }
  std::int64_t applied = 0;
  const std::string table = table_name(view, version);
  for (std::size_t start = 0; start < events.size(); start += kReplayBatch) {
    // The relay applies live events to the same rows meanwhile (a moved transaction locks two
    // accounts), so a chunk can meet a deadlock: it rolls back whole and is applied again,
    // which the version filter and the inbox make safe.
    std::int64_t chunk_applied = 0;
    db::with_retries({}, "replaying events into " + table, [&] {
      chunk_applied = 0;
      pqxx::work txn(connection);
      for (std::size_t i = start; i < std::min(events.size(), start + kReplayBatch); ++i) {
        const ViewEvent& event = events[i];
        const ApplyOutcome outcome = view == kAccountBalance ? apply_account_balance(txn, table, event, over_gaps)
                                                             : apply_daily_totals(txn, table, event);
        if (outcome == ApplyOutcome::kApplied) ++chunk_applied;
      }
      txn.commit();
    });
    applied += chunk_applied;
  }
  return applied;
}

}  // namespace

bool is_known_view(const std::string& name) { return name == kAccountBalance || name == kDailyTotals; }

std::string table_name(const std::string& view, int version) { return view + "_v" + std::to_string(version); }

std::optional<ViewEvent> parse_view_event(const relay::OutboxEvent& event) {
  boost::system::error_code error;
  const auto json = boost::json::parse(event.payload, error);
  if (error || !json.is_object()) return std::nullopt;
  const auto& object = json.as_object();
  ViewEvent view_event;
  view_event.outbox_id = event.id;
  view_event.destination = event.destination;
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
  view_event.previous_occurred_at = optional_string(object, "previous_occurred_at");
  return view_event;
}

ApplyOutcome apply_event(pqxx::transaction_base& txn, const std::string& view, int version, const ViewEvent& event) {
  const std::string table = table_name(view, version);
  return view == kAccountBalance ? apply_account_balance(txn, table, event, false) : apply_daily_totals(txn, table, event);
}

std::vector<int> receiving_versions(pqxx::transaction_base& txn, const std::string& view) {
  std::vector<int> versions;
  for (const auto& row : txn.exec_params(
           std::string(sql::kViewsReceivingVersions), view)) {
    versions.push_back(row[0].as<int>());
  }
  return versions;
}

void ensure_first_versions(pqxx::connection& connection, const std::vector<std::string>& names) {
  for (const auto& name : names) {
    pqxx::work txn(connection);
    // Serializes two processes starting at once; the second sees the first's version.
    txn.exec_params(std::string(sql::kViewsLockView), name);
    if (!txn.exec_params(std::string(sql::kViewsAnyVersion), name).empty()) continue;
    txn.exec(statement(create_statement(name), table_name(name, 1)));
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
  for (const auto& row : txn.exec(std::string(sql::kViewsList))) {
    ViewVersion version;
    version.name = row[0].as<std::string>();
    version.version = row[1].as<int>();
    version.status = row[2].as<std::string>();
    version.position = row[3].as<std::string>();
    version.created_at = row[4].as<std::string>();
    version.lag_seconds = row[5].as<double>();
    version.pending = row[6].as<std::int64_t>();
    version.dead = row[7].as<std::int64_t>();
    versions.push_back(std::move(version));
  }
  return versions;
}

std::optional<AccountBalance> read_account_balance(pqxx::connection& connection, const std::string& account_id) {
  pqxx::read_transaction txn(connection);
  const auto live = txn.exec_params(
      std::string(sql::kViewsLiveVersion), std::string(kAccountBalance));
  if (live.empty() || live[0][0].is_null()) return std::nullopt;
  AccountBalance reading;
  reading.view_version = live[0][0].as<int>();
  const auto rows = txn.exec_params(
      statement(sql::kViewsReadAccountBalance, txn.quote_name(table_name(kAccountBalance, reading.view_version))),
      account_id);
  if (!rows.empty()) {
    reading.balance = rows[0][0].c_str();
    reading.sequence = rows[0][1].as<std::int64_t>();
    reading.updated_at = rows[0][2].c_str();
  }
  return reading;
}

RebuildSource rebuild_source(pqxx::connection& connection, const std::string& view,
                             const std::vector<std::string>& feeders) {
  if (view != kAccountBalance || feeders.empty()) return RebuildSource::kFullHistory;
  pqxx::read_transaction txn(connection);
  const std::string list = db::text_array_literal(feeders);
  const auto others = txn.exec_params(
      std::string(sql::kViewsOtherFeeders), list);
  return others[0][0].as<bool>() ? RebuildSource::kFullHistory : RebuildSource::kSnapshot;
}

std::int64_t rebuild_view(const std::string& database_url, const std::string& view, int version,
                          RebuildSource source) {
  if (!is_known_view(view)) {
    throw ViewError("unknown view '" + view + "': tidemark ships account_balance and daily_totals");
  }
  if (version < 1) throw ViewError("--version must be 1 or more");
  const std::string table = table_name(view, version);
  pqxx::connection connection(database_url);
  std::string position = "full history";
  {
    // Registering the version makes the relay feed it from now on. From a snapshot, the
    // same transaction fills it, and records the snapshot's position.
    pqxx::transaction<pqxx::isolation_level::repeatable_read> txn(connection);
    txn.exec_params(std::string(sql::kViewsLockView), view);
    if (version_exists(txn, view, version)) {
      throw ViewError("view " + table + " already exists (versions are never reused); see `tidemark views list`");
    }
    txn.exec(statement(create_statement(view), table));
    if (source == RebuildSource::kSnapshot && view == kAccountBalance) {
      position = txn.exec(std::string(sql::kViewsSnapshotPosition))[0][0].as<std::string>();
      txn.exec(statement(sql::kViewsAccountBalanceSnapshot, table));
    }
    txn.exec_params(std::string(sql::kViewsRegisterVersion), view,
                    version, position);
    txn.commit();
  }
  // Events delivered to the older versions before this one was visible are still in the
  // outbox: account_balance replays, in per-account order, those its table does not reflect
  // yet (all of them after no snapshot; the version filter drops the rest); daily_totals
  // replays all of them through its own inbox, which also dedups against the relay feeding
  // it meanwhile.
  // After a snapshot a gap means an event not yet applied (the relay brings it); in the
  // whole history it is permanent, and the events after it still count.
  const std::int64_t replayed =
      view == kAccountBalance
          ? replay(connection, view, version, statement(sql::kViewsAccountBalanceCatchUp, table),
                   position == "full history")
          : replay(connection, view, version, std::string(sql::kViewsHistory), false);
  pqxx::work txn(connection);
  txn.exec_params(std::string(sql::kViewsMarkLive), view,
                  version);
  const auto rows = txn.exec(statement(sql::kViewsCountRows, table))[0][0].as<std::int64_t>();
  txn.commit();
  spdlog::info("view {} is live: {} rows, {} events replayed from the outbox", table, rows, replayed);
  return rows;
}

void drop_view(pqxx::connection& connection, const std::string& view, int version) {
  pqxx::work txn(connection);
  txn.exec_params(std::string(sql::kViewsLockView), view);
  const auto status = txn.exec_params(std::string(sql::kViewsVersionStatus), view, version);
  const std::string table = table_name(view, version);
  if (status.empty() || status[0][0].as<std::string>() == "retired") {
    throw ViewError("view " + table + " does not exist or is already retired; see `tidemark views list`");
  }
  const auto others = txn.exec_params(
      std::string(sql::kViewsOtherLiveVersions), view, version);
  if (others[0][0].as<std::int64_t>() == 0) {
    throw ViewError("view " + table + " is the only live version of " + view +
                    "; rebuild another version first (`tidemark views rebuild " + view + " --version N`)");
  }
  // The UPDATE waits for sinks holding the row FOR SHARE, so no event is applied to the
  // table after it is gone.
  txn.exec_params(std::string(sql::kViewsRetireVersion), view,
                  version);
  txn.exec(statement(sql::kViewsDropTable, table));
  txn.exec_params(std::string(sql::kViewsForgetInbox), table);
  txn.commit();
}

Duration redelivery_horizon(const RelayConfig& config, Duration lease) {
  Duration horizon = lease * config.max_attempts;
  for (int attempt = 1; attempt < config.max_attempts; ++attempt) {
    horizon += backoff_ceiling(config.base_delay, config.max_delay, attempt);
  }
  return horizon;
}

std::int64_t cleanup_inbox(pqxx::connection& connection, Duration retention, const RelayConfig& config,
                           Duration lease) {
  const Duration horizon = redelivery_horizon(config, lease);
  if (retention <= horizon) {
    throw ViewError("inbox retention " + std::to_string(retention.count()) +
                    " ms is not longer than the relay's longest redelivery window (" +
                    std::to_string(horizon.count()) +
                    " ms: every retry delay at relay.max_delay plus one lease per attempt, over relay.max_attempts); "
                    "a redelivered event would be applied twice. Use a longer --retention");
  }
  pqxx::work txn(connection);
  const auto deleted = txn.exec_params(std::string(sql::kViewsCleanupInbox), static_cast<long long>(retention.count()));
  txn.commit();
  return deleted.affected_rows();
}

std::map<std::string, ViewHealth> view_health(pqxx::connection& connection, const std::vector<std::string>& names) {
  const std::string array = db::text_array_literal(names);
  pqxx::read_transaction txn(connection);
  std::map<std::string, ViewHealth> health;
  for (const auto& row : txn.exec_params(std::string(sql::kViewsLag), array)) {
    health[row[0].as<std::string>()] = ViewHealth{row[1].as<double>(), row[2].as<std::int64_t>()};
  }
  return health;
}

}  // namespace tidemark::pipeline::views
