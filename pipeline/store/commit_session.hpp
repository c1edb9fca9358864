#pragma once
// The committer's database sessions (docs/architecture.md "One run per pipeline"): connected
// when needed, each holding the pipeline's lock (or recorded as a partition's worker) and its
// own stage table, and the fence each batch passes before it writes.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include <pqxx/pqxx>

#include "pipeline/core/error.hpp"
#include "pipeline/store/partition_lease.hpp"
#include "pipeline/store/pg/database.hpp"
#include "pipeline/store/pipeline_lock.hpp"

namespace tidemark::pipeline {

// A batch of a run whose row no longer says 'running' (Committer::commit; never retried): the
// run lost its sessions and another run of the pipeline started, which ended it.
struct RunEnded : tidemark::Error {
  explicit RunEnded(const std::string& message) : tidemark::Error(tidemark::ErrorKind::kConflict, message) {}
};

class CommitSessions {
 public:
  // `create_stage` is the entity's stage DDL, run on each session when it connects. Each
  // session is a connection of its own (Database::connect, not pooled): it holds a session
  // lock or a worker's registration, and its stage table, for as long as the run lasts.
  // `database` outlives the sessions.
  CommitSessions(db::Database& database, std::string pipeline, std::string create_stage);
  ~CommitSessions();  // releases the pipeline's locks
  CommitSessions(const CommitSessions&) = delete;
  CommitSessions& operator=(const CommitSessions&) = delete;

  // Ownership of one partition replaces the pipeline's locks (Committer::own_partition).
  void own_partition(const PartitionLeases& leases, PartitionLease lease);
  // Two sessions, batch N on session (N - 1) % 2, each with one of the pipeline's two locks
  // (Committer::stage_batches_ahead). Before the first session().
  void use_two();
  bool two() const { return two_; }

  // Session `index`'s connection, (re)connected when needed: the lock (PipelineBusy when held)
  // or the worker's registration, then its stage.
  pqxx::connection& session(std::size_t index);
  // Session 0 as it is, without reconnecting: null when there is none or it is closed.
  pqxx::connection* open_first() const;
  // The session batch `batch_no` commits on.
  std::size_t session_of(int batch_no) const;
  // Forgets session `index` when its connection is lost, so that session() reconnects it. An
  // open one (a serialization failure or a deadlock, rolled back) is kept, and with it the
  // pipeline's lock: a new session could not take the lock until the old backend has exited
  // (PipelineBusy), and another run could take it in between.
  void forget_if_lost(std::size_t index);

  // The partition's lease fence, or the run's: throws RunEnded unless run_id is still
  // running, and holds its row until the batch ends.
  void fence(pqxx::transaction_base& txn, std::int64_t run_id) const;
  bool partitioned() const { return leases_ != nullptr; }

 private:
  void fence_run(pqxx::transaction_base& txn, std::int64_t run_id) const;

  db::Database& database_;
  std::string pipeline_;
  std::string create_stage_;
  const PartitionLeases* leases_ = nullptr;  // set by own_partition
  PartitionLease lease_;
  // The second is open when two are used. Each is used by one thread at a time: the one
  // committing or staging the batch whose session it is.
  std::array<std::unique_ptr<pqxx::connection>, 2> sessions_;
  bool two_ = false;
};

}  // namespace tidemark::pipeline
