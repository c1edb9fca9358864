#pragma once
// The commit step, the only writer during a batch (docs/architecture.md): one transaction per
// batch that stages the planned versions, compares them with the stored rows, upserts, logs
// the changes for the destinations, writes quarantine entries, the ledger row and the
// checkpoint. The committer decides which transaction a batch runs in and how often by its
// mode (CommitMode below: retries with read-back, staging ahead on two sessions, a dry run's
// one transaction); its sessions are commit_session.hpp's, the batch's statements
// batch_writer.hpp's.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "pipeline/store/pg/database.hpp"
#include "pipeline/core/entity.hpp"
#include "pipeline/core/plan.hpp"
#include "pipeline/core/record.hpp"
#include "pipeline/core/source.hpp"
#include "pipeline/store/batch_writer.hpp"
#include "pipeline/store/commit_session.hpp"
#include "pipeline/store/partition_lease.hpp"
#include "pipeline/store/pipeline_lock.hpp"

namespace tidemark::pipeline {

// A batch staged ahead (Committer::stage_ahead): the transaction, left open on the session the
// batch commits on, whose stage holds its versions; Committer::commit continues it. Destroyed
// before that (the run stopped or failed first), it rolls back. Null: not staged.
using StagedBatch = std::unique_ptr<pqxx::work>;

// One batch as the commit step needs it: what was read, what the validator and planner
// made of it, and where it starts and ends in the source.
struct BatchInput {
  const std::vector<DecodedRecord>& decoded;
  const std::vector<Checked>& validated;
  const BatchPlan& plan;
  int batch_no = 0;
  std::string start_position;
  // The checkpoint to advance to (when the source orders it after the stored one); nullopt
  // for a batch that is not read from the source (a quarantine release), which leaves the
  // checkpoint alone.
  std::optional<Position> end;
  // A quarantine entry this batch re-drives: marked released, with the outcome, in the
  // batch's own transaction.
  std::optional<std::int64_t> releases_quarantine_id;
  std::string released_by;
  // The position and source its quarantine entry had, stored text as it is: a released record
  // keeps them when it is quarantined again (its decoded position names no place in the
  // source), so that it has one open entry however often it is released and replayed.
  std::optional<std::string> quarantine_position;
  std::optional<std::string> quarantine_source;
  // Called with the batch's outcomes before it commits; an exception thrown from it rolls
  // the batch back and ends the commit (a run's rejection threshold).
  std::function<void(const OutcomeCounts&)> admit;
  // The batch as Committer::stage_ahead staged it, or null: the commit's first attempt
  // continues its transaction (and takes it), a retry stages the batch again.
  StagedBatch* staged = nullptr;
  // What the batch read of each file it read from (Source::take_marks): the registry of files
  // read moves in the batch's transaction, with the checkpoint.
  std::vector<FileMark> marks;
};

struct BatchResult {
  OutcomeCounts counts;
  std::vector<Outcome> outcomes;  // per record; empty when recovered by read-back
  // Changes written to the change log, one per applied change whatever the destinations (none
  // without destinations); a relay is woken when there is one.
  std::uint64_t changes_logged = 0;
  bool recovered = false;  // the commit's outcome was unknown and read back from the ledger
};

// Where quarantined records came from, so that a release can decode them again: the
// source's format name (Source::format), stored with each entry together with the record's
// own DecodedRecord::decode_context.
struct QuarantineOrigin {
  std::string format;
};

// The committer's modes (Committer picks one): which transaction a batch runs in and how
// often. Each batch committed in a transaction of its own, with retries and the ledger's
// read-back; the same while staging ahead, where a batch may come already staged on its
// session; a dry run's one transaction that is never committed.
class CommitMode {
 public:
  virtual ~CommitMode() = default;
  // Commits `batch` as the mode does (Committer::commit).
  virtual BatchResult commit(const BatchInput& batch, const QuarantineOrigin& origin, std::int64_t run_id) = 0;
  // Stages `batch` on its session for commit() to continue; null in a mode that does not
  // stage ahead (Committer::stage_ahead).
  virtual StagedBatch stage_ahead(const BatchInput& batch);
};

// Each batch in a transaction of its own on its session, committed; transient failures are
// retried, each retry after reading back the ledger.
class CommitEachBatch : public CommitMode {
 public:
  CommitEachBatch(const std::string& pipeline, db::RetryPolicy retry, const BatchWriter& writer,
                  CommitSessions& sessions);
  BatchResult commit(const BatchInput& batch, const QuarantineOrigin& origin, std::int64_t run_id) override;

 protected:
  const BatchWriter& writer_;
  CommitSessions& sessions_;

 private:
  // One attempt: `staged` continued when given, else a new transaction that stages the batch.
  BatchResult attempt(const BatchInput& batch, const QuarantineOrigin& origin, std::int64_t run_id,
                      StagedBatch staged);
  std::optional<BatchResult> read_back(std::size_t session, std::int64_t run_id, int batch_no);

  const std::string& pipeline_;
  db::RetryPolicy retry_;
};

// CommitEachBatch on two sessions, whose batches the read stage COPYs into their session's
// stage while the batch before commits on the other (docs/architecture.md "Staging ahead").
class StagingAhead final : public CommitEachBatch {
 public:
  using CommitEachBatch::CommitEachBatch;
  StagedBatch stage_ahead(const BatchInput& batch) override;
};

// One transaction on the first session for every batch, never committed (Committer::begin_dry_run):
// each batch runs the stage and the apply statement, so it sees the batches before it; no
// quarantine entry, ledger row or checkpoint is written, and a failure is not retried.
// Destroyed, it rolls all of them back.
class DryRun final : public CommitMode {
 public:
  DryRun(pqxx::connection& first, const BatchWriter& writer, const CommitSessions& sessions);
  BatchResult commit(const BatchInput& batch, const QuarantineOrigin& origin, std::int64_t run_id) override;
  pqxx::transaction_base& transaction() { return transaction_; }

 private:
  const BatchWriter& writer_;
  const CommitSessions& sessions_;
  pqxx::work transaction_;
};

class Committer {
 public:
  // `source` is the source's identity (valid text); `precedes` orders its positions, so the
  // checkpoint a batch advances to never moves it backwards (required to commit a batch with
  // an end position). `entity` is the entity the batches load, through the statements
  // generated from its declaration (pipeline/store/entity_sql.hpp); its table must exist
  // (the migrations make the built-in one's, ensure_entity_table a declared one's). Its
  // sessions are connections of `database` (CommitSessions), which outlives it.
  Committer(db::Database& database, std::string pipeline, std::string source, std::vector<std::string> destinations,
            db::RetryPolicy retry = {}, PositionOrder precedes = nullptr,
            const EntityDeclaration& entity = built_in_transaction_entity());
  ~Committer();  // releases the pipeline's lock
  Committer(const Committer&) = delete;
  Committer& operator=(const Committer&) = delete;

  // Commits one batch, retrying transient failures; each attempt after the first reads
  // back the ledger first, so a batch whose COMMIT was lost in transit is not redone. Throws
  // RunEnded when run_id is no longer running (another run of the pipeline ended it).
  BatchResult commit(const BatchInput& batch, const QuarantineOrigin& origin, std::int64_t run_id);

  // For one partition of a partitioned source (docs/scale-out.md "Workers"): ownership of the
  // partition replaces the pipeline's lock. Each (re)connect records its session as the
  // worker's, and every batch's transaction first checks that the worker still owns `lease`
  // (LeaseLost, never retried, when another worker took it). Call before connection();
  // `leases` must outlive the committer.
  void own_partition(const PartitionLeases& leases, PartitionLease lease);

  // The first session's connection, (re)connected when needed, taking the pipeline's locks
  // (PipelineBusy when held; pipeline_lock.hpp) or, for a partition, recording the session as
  // its worker's. When staging ahead, the second session too.
  pqxx::connection& connection();
  // The first session's connection as it is, without reconnecting: null when there is none
  // or it is closed (lost, or dropped after a failed attempt).
  pqxx::connection* open_connection() const;

  // Staging ahead (tidemark run, docs/architecture.md): the batches alternate between two
  // sessions (batch N commits on session (N - 1) % 2), so that stage_ahead() can COPY batch
  // N + 1 into its session's stage while batch N commits on the other. Each session holds one
  // of the pipeline's two locks; for a partition both are the worker's, and each batch's
  // fence checks its ownership as before. Call before connection(); not for a dry run.
  void stage_batches_ahead();
  // Stages `batch` on the session it commits on, in a new transaction, for commit() to
  // continue (BatchInput::staged). Runs on another thread than commit(), while that commits
  // batch_no - 1 or nothing. Null when not staging ahead, when the batch has no versions, or
  // when staging failed: commit() then stages it itself, under its retries, and meets a
  // lasting failure there.
  StagedBatch stage_ahead(const BatchInput& batch);

  // At the end of a run: the marks no batch carried (files emptied, or read again to no
  // record) and the files the run found (`seen`, for the registry's retention), in one
  // transaction of their own, fenced as a batch is. Retries transient failures.
  void record_files(const std::vector<FileMark>& marks, const std::vector<std::string>& seen, std::int64_t run_id);

  // A dry run (tidemark run --dry-run): from here on every batch runs the stage and the
  // apply statement of a real commit, so its outcomes are the statement's own verdicts, in
  // one transaction on the locked connection that is never committed. Each batch therefore
  // sees the batches before it, as in a real run, and the destructor rolls all of them back.
  // No quarantine entry, ledger row or checkpoint is written, and a failure is not retried
  // (it ends the dry run; nothing was kept). Call after connection().
  void begin_dry_run();
  // The dry run's transaction, for statements that must be undone with its batches (a
  // declared entity's table that does not exist yet). Only after begin_dry_run().
  pqxx::transaction_base& dry_run_transaction();

 private:
  std::string pipeline_;
  db::RetryPolicy retry_;
  BatchWriter writer_;
  CommitSessions sessions_;
  // After the sessions: a dry run's transaction rolls back before they release the locks.
  std::unique_ptr<CommitMode> mode_;  // CommitEachBatch until stage_batches_ahead() or begin_dry_run()
  DryRun* dry_run_ = nullptr;         // mode_, when it is the dry run
};

}  // namespace tidemark::pipeline
