#pragma once
// Retention (docs/retention.md): everything that grows without bound is deleted once older
// than its window of the config's `retention:` section, in chunks of at most `chunk` rows per
// transaction so that no lock is held for long:
//   outbox        changes of the log created before retention.outbox that every destination
//                 they feed is past and no dead letter holds, unless a version of the view
//                 of one of them is being built (its rebuild replays that destination);
//   batch_ledger  rows of runs finished before retention.runs, rolled up into tidemark_run_daily;
//   runs          those runs (never a pipeline's latest), rolled up the same way;
//   quarantine    entries released before retention.quarantine (open entries stay);
//   requests      webhook-ids received before retention.requests;
//   inbox         view inbox rows older than retention.inbox, refused (docs/rules.md rule 16)
//                 when that does not exceed the relay's longest redelivery window.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <pqxx/pqxx>

#include "app/config/config.hpp"
#include "pipeline/views/admin.hpp"

namespace tidemark::app::retention {

// Rows deleted per transaction.
inline constexpr std::int64_t kDefaultChunk = 5000;

// The kinds in the order the job deletes them: the ledger before the runs it references.
inline constexpr std::string_view kKinds[] = {"outbox",   "batch_ledger", "runs",        "quarantine",
                                               "requests", "inbox",        "source_files"};

struct KindResult {
  std::string kind;           // one of kKinds
  std::int64_t deleted = 0;   // rows deleted (with dry_run: rows that would be)
  std::vector<std::string> kept;  // why rows past the window were kept, or the kind skipped: logged
};

struct Options {
  app::config::RetentionConfig windows;
  pipeline::views::Redelivery redelivery;  // for the inbox's rule 16 check
  std::int64_t chunk = kDefaultChunk;
  bool dry_run = false;  // count what would be deleted; delete nothing
  // Called after each committed chunk that deleted rows (serve counts them in
  // tidemark_retention_deleted_total{kind}).
  std::function<void(std::string_view kind, std::int64_t deleted)> on_chunk;
};

// Runs every kind once, each to the end of what its window allows. A database error
// propagates (what was committed stays deleted; the next run goes on from there).
std::vector<KindResult> run_retention(pqxx::connection& connection, const Options& options);

}  // namespace tidemark::app::retention
