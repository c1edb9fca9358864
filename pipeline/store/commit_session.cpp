#include "pipeline/store/commit_session.hpp"

#include "pipeline/store/pg/row.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline {

CommitSessions::CommitSessions(db::Database& database, std::string pipeline, std::string create_stage)
    : database_(database), pipeline_(std::move(pipeline)), create_stage_(std::move(create_stage)) {}

CommitSessions::~CommitSessions() {
  if (leases_) return;
  if (sessions_[0]) release_pipeline_lock(*sessions_[0], pipeline_);
  pqxx::connection* second = two_ ? sessions_[1].get() : sessions_[0].get();
  if (second) release_pipeline_lock(*second, pipeline_, PipelineLock::kSecond);
}

void CommitSessions::own_partition(const PartitionLeases& leases, PartitionLease lease) {
  if (sessions_[0]) throw std::logic_error("Committer::own_partition: after connection()");
  leases_ = &leases;
  lease_ = lease;
}

void CommitSessions::use_two() {
  if (sessions_[0]) throw std::logic_error("Committer::stage_batches_ahead: after connection()");
  two_ = true;
}

pqxx::connection& CommitSessions::session(std::size_t index) {
  std::unique_ptr<pqxx::connection>& connection = sessions_.at(index);
  if (!connection || !connection->is_open()) {
    connection = database_.connect();
    try {
      if (leases_) {
        leases_->register_session(*connection);
      } else if (index == 1) {
        take_pipeline_lock(*connection, pipeline_, PipelineLock::kSecond);
      } else {
        take_pipeline_lock(*connection, pipeline_);
        if (!two_) take_pipeline_lock(*connection, pipeline_, PipelineLock::kSecond);
      }
      // In the same try: a session kept without its stage would fail every batch (42P01).
      pqxx::nontransaction setup(*connection);
      setup.exec(std::string(sql::kCommitCreateStage));
      setup.exec(create_stage_);
    } catch (...) {
      connection.reset();
      throw;
    }
  }
  return *connection;
}

pqxx::connection* CommitSessions::open_first() const {
  return sessions_[0] && sessions_[0]->is_open() ? sessions_[0].get() : nullptr;
}

std::size_t CommitSessions::session_of(int batch_no) const {
  return two_ ? static_cast<std::size_t>(batch_no - 1) % 2 : 0;
}

void CommitSessions::forget_if_lost(std::size_t index) {
  if (sessions_.at(index) && !sessions_[index]->is_open()) sessions_[index].reset();
}

void CommitSessions::fence_run(pqxx::transaction_base& txn, std::int64_t run_id) const {
  const auto rows = txn.exec_params(std::string(sql::kCommitFenceRun), run_id);
  const std::string status = rows.empty() ? "gone" : db::Row(rows[0]).text("status");
  if (status == "running") return;
  throw RunEnded("run " + std::to_string(run_id) + " of pipeline " + pipeline_ + " is no longer running (its status is " +
                 status + "): it lost its database sessions, and another run of the pipeline started meanwhile. "
                 "It commits no more batches; those it committed stand");
}

void CommitSessions::fence(pqxx::transaction_base& txn, std::int64_t run_id) const {
  if (leases_) {
    leases_->fence(txn, lease_);
  } else {
    fence_run(txn, run_id);
  }
}

}  // namespace tidemark::pipeline
