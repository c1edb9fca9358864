#include "app/retention/retention.hpp"


#include <spdlog/spdlog.h>

#include "pipeline/core/duration.hpp"
#include "pipeline/store/pg/database.hpp"
#include "pipeline/store/pg/row.hpp"
#include "sql/statements.hpp"

namespace tidemark::app::retention {

namespace {

using pipeline::Duration;

// Runs a chunk statement of sql/retention/ (parameters: first id, window in milliseconds,
// chunk size; result: the chunk's last id, rows deleted, whether any row was older than the
// window), one transaction per chunk, in primary key order. It stops at an empty chunk, or at
// one with no row created before the window: ids (the log's positions) grow with creation
// time, so the rows after it are newer still. `before` runs first in each chunk's transaction.
std::int64_t by_primary_key(pqxx::connection& connection, std::string_view kind, std::string_view statement,
                            Duration window, const Options& options,
                            const std::function<void(pqxx::work&)>& before = {}) {
  std::int64_t from = 0;
  std::int64_t total = 0;
  while (true) {
    pqxx::work txn(connection);
    if (before) before(txn);
    const auto row = txn.exec_params1(std::string(statement), static_cast<long long>(from),
                                      static_cast<long long>(window.count()), static_cast<long long>(options.chunk));
    txn.commit();
    const pipeline::db::Row chunk(row);
    const auto last_id = chunk.optional<std::int64_t>("last_id");
    if (!last_id) return total;
    const auto deleted = chunk.get<std::int64_t>("deleted");
    total += deleted;
    if (deleted > 0 && options.on_chunk) options.on_chunk(kind, deleted);
    if (!chunk.get<bool>("any_older")) return total;
    from = *last_id + 1;
  }
}

// Why the changes of a destination are kept: a version of the view it feeds is being built
// (pipeline/views/admin.cpp rebuild_view replays the destination from the change log).
std::vector<std::string> outbox_kept(pqxx::connection& connection) {
  std::vector<std::string> kept;
  pqxx::read_transaction txn(connection);
  for (const auto& rebuilding : txn.exec(std::string(sql::kRetentionViewsRebuilding))) {
    const pipeline::db::Row row(rebuilding);
    const auto name = row.get<std::string>("name");
    kept.push_back("changes of destination " + name + " kept: view " + name + " version " +
                   row.get<std::string>("version") + " is being built, and its rebuild replays the destination's outbox");
  }
  return kept;
}

std::string inbox_refusal(const Options& options) {
  const Duration horizon = pipeline::views::redelivery_horizon(options.redelivery);
  if (options.windows.inbox > horizon) return "";
  return "inbox rows kept: retention.inbox " + pipeline::format_duration(options.windows.inbox) +
         " is not longer than the relay's longest redelivery window (" + pipeline::format_duration(horizon) +
         "), so a redelivered event would be applied twice (docs/rules.md rule 16)";
}

std::vector<KindResult> dry_run(pqxx::connection& connection, const Options& options) {
  const auto& windows = options.windows;
  std::vector<KindResult> results;
  const auto kept = outbox_kept(connection);
  const auto refusal = inbox_refusal(options);
  pqxx::read_transaction txn(connection);
  const auto row = txn.exec_params1(
      std::string(sql::kRetentionDryRun), static_cast<long long>(windows.outbox.count()),
      static_cast<long long>(windows.runs.count()), static_cast<long long>(windows.quarantine.count()),
      static_cast<long long>(windows.requests.count()), static_cast<long long>(windows.inbox.count()));
  // dry_run.sql names each count by its kind.
  const pipeline::db::Row counts(row);
  for (const std::string_view kind : kKinds) {
    results.push_back(KindResult{std::string(kind), counts.get<std::int64_t>(std::string(kind).c_str()), {}});
  }
  for (auto& result : results) {
    if (result.kind == "outbox") result.kept = kept;
    if (result.kind == "inbox" && !refusal.empty()) {
      result.deleted = 0;
      result.kept.push_back(refusal);
    }
  }
  return results;
}

}  // namespace

std::vector<KindResult> run_retention(pqxx::connection& connection, const Options& options) {
  if (options.dry_run) return dry_run(connection, options);
  const auto& windows = options.windows;
  std::vector<KindResult> results;
  // Each committed chunk of `kind`, to options.on_chunk.
  const auto counted = [&](std::string_view kind) -> std::function<void(std::int64_t)> {
    if (!options.on_chunk) return {};
    return [&options, kind](std::int64_t rows) { options.on_chunk(kind, rows); };
  };

  KindResult outbox{"outbox", 0, outbox_kept(connection)};
  // The lock that `views rebuild` registers a version under: no rebuild begins between the
  // chunk's look at the registry and its delete.
  outbox.deleted = by_primary_key(connection, "outbox", sql::kRetentionOutboxChunk, windows.outbox, options,
                                  [](pqxx::work& txn) { txn.exec(std::string(sql::kRetentionLockViews)); });
  results.push_back(std::move(outbox));

  results.push_back(KindResult{
      "batch_ledger", by_primary_key(connection, "batch_ledger", sql::kRetentionLedgerChunk, windows.runs, options), {}});
  results.push_back(
      KindResult{"runs", by_primary_key(connection, "runs", sql::kRetentionRunsChunk, windows.runs, options), {}});
  results.push_back(KindResult{
      "quarantine", by_primary_key(connection, "quarantine", sql::kRetentionQuarantineChunk, windows.quarantine, options),
      {}});

  results.push_back(KindResult{
      "requests", pipeline::db::delete_in_chunks(connection, sql::kRetentionRequestsChunk, windows.requests,
                                                 options.chunk, counted("requests")),
      {}});

  KindResult inbox{"inbox", 0, {}};
  if (const auto refusal = inbox_refusal(options); !refusal.empty()) {
    inbox.kept.push_back(refusal);
  } else {
    inbox.deleted =
        pipeline::views::cleanup_inbox(connection, windows.inbox, options.redelivery, counted("inbox"), options.chunk);
  }
  results.push_back(std::move(inbox));

  // The registry of files read, by the runs' window: a file gone that long is not coming back.
  results.push_back(KindResult{
      "source_files", pipeline::db::delete_in_chunks(connection, sql::kRetentionSourceFilesChunk, windows.runs,
                                                     options.chunk, counted("source_files")),
      {}});
  return results;
}

}  // namespace tidemark::app::retention
