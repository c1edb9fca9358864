#pragma once
// The run controller: one active run per pipeline (a PostgreSQL advisory lock; per partition,
// by its worker's lease, for a partitioned source), reading the
// source from its checkpoint to the end, batch by batch: decode -> validate -> plan -> commit.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "pipeline/core/error.hpp"
#include "pipeline/run/limits.hpp"
#include "pipeline/store/pg/database.hpp"
#include "pipeline/store/committer.hpp"
#include "pipeline/core/entity.hpp"
#include "pipeline/core/record.hpp"
#include "pipeline/core/source.hpp"

namespace tidemark::pipeline {

// What a committed batch reports to whoever watches the run (metrics, progress).
struct BatchReport {
  std::uint64_t batch_no = 0;
  OutcomeCounts counts;
  double seconds = 0;      // read + validate + plan + commit of this batch
  std::string checkpoint;  // the position committed with it
};

// A run of one partition of a partitioned source, by the worker that owns it: the lease
// replaces the pipeline's lock (docs/scale-out.md "Workers", Committer::own_partition).
struct PartitionOwnership {
  const PartitionLeases* leases = nullptr;  // the worker's; outlives the run
  PartitionLease lease;
};

struct RunRequest {
  std::string pipeline;
  // The database the run loads into; it outlives the run. The commit's sessions are
  // connections of its own (CommitSessions), the run's end is recorded on one of its pool's
  // when those are gone (finish_run).
  db::Database* database = nullptr;
  std::function<std::unique_ptr<Source>()> open_source;  // opened once the lock is held
  // The entity the pipeline loads; its source decodes its fields (record_layout). A declared
  // entity's table is created or brought up to date before the run starts
  // (db::ensure_entity_table; db::EntitySchemaError when it cannot hold the declaration).
  EntityDeclaration entity = built_in_transaction_entity();
  std::size_t batch_size = 10000;
  std::size_t max_batch_bytes = kDefaultMaxBatchBytes;  // a batch closes before its raw bytes pass it
  std::optional<RejectionLimit> max_rejected;  // unlimited when unset
  bool replay = false;
  // Every batch is read, checked, planned and applied as in a run, in one transaction that is
  // rolled back at the end (Committer::begin_dry_run), under the pipeline's lock: no state,
  // outbox, quarantine, ledger, checkpoint or run row is written. A declared entity's table
  // that does not exist yet is created inside that transaction, so it is not kept either; one
  // that lacks columns of the declaration is refused (db::EntitySchemaError), as adding them
  // would lock the table against its readers for the whole dry run.
  bool dry_run = false;
  std::vector<std::string> destinations;
  std::string trigger = "cli";
  std::optional<std::int64_t> run_id;  // a run already recorded as queued (serve)
  std::optional<std::string> request_id;
  std::optional<std::string> reason;
  db::RetryPolicy retry;
  // Checked between batches: when set, the run stops after the batch in hand has committed.
  const std::atomic<bool>* stop_requested = nullptr;
  // Called after each committed batch, on the run's thread.
  std::function<void(const BatchReport&)> on_batch;
  std::optional<PartitionOwnership> partition;  // a worker's run of a partition it owns
};

struct RunSummary {
  std::string pipeline;
  std::int64_t run_id = 0;  // 0 for a dry run: none is recorded
  bool dry_run = false;
  std::uint64_t batches = 0;
  OutcomeCounts counts;
  std::string checkpoint;  // the position the run ended at (a dry run's: not stored)
  bool stopped_early = false;
  // Bytes of a last line left for the next run: it had no newline and had not settled.
  std::uint64_t pending_tail_bytes = 0;
  // Files whose content up to where an earlier run read them changed: read again from their
  // start (docs/sources.md "Files that change").
  std::vector<ChangedFile> rewritten_files;
};

// The run's rejected records crossed request.max_rejected; the batch that crossed it was
// rolled back.
struct RejectionLimitExceeded : tidemark::Error {
  explicit RejectionLimitExceeded(const std::string& message)
      : tidemark::Error(tidemark::ErrorKind::kPermanent, message) {}
};

RunSummary run_pipeline(const RunRequest& request);

// What the batches of earlier runs read of each file of (pipeline, source): the registry of
// files read (Source::restore_marks); empty for sources that read no files.
std::vector<FileMark> stored_marks(pqxx::connection& connection, const std::string& pipeline,
                                   const std::string& source);

// The checkpoint stored for (pipeline, source); nullopt before the first commit.
std::optional<Position> stored_checkpoint(pqxx::connection& connection, const std::string& pipeline,
                                          const std::string& source);

// Creates or brings a declared entity's table up to date and logs what changed; nothing for
// the built-in entity. db::EntitySchemaError when the table cannot hold the declaration.
void ensure_table(pqxx::connection& connection, const EntityDeclaration& entity);

// Records a run as running (inserting it, or updating request.run_id) and returns its id.
// Called with the pipeline's lock held, it first marks runs left 'running' by a dead
// process as failed; for a partition, with the partition's lease held, the runs of the
// pipeline's dead workers, and records the run as its worker's.
std::int64_t start_run(pqxx::connection& connection, const RunRequest& request);
// Records the end of a run ("succeeded", "stopped" or "failed") on `healthy` (the run's own
// connection, null when it is gone), and on a connection of `database`'s pool only when there
// is none or it fails (retried by its policy): a run opens no second connection to end.
void finish_run(pqxx::connection* healthy, db::Database& database, std::int64_t run_id, const std::string& status,
                const std::string& error);

}  // namespace tidemark::pipeline
