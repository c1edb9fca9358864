#include "pipeline/store/committer.hpp"

#include <stdexcept>

#include <spdlog/spdlog.h>

#include "pipeline/core/failpoint.hpp"
#include "pipeline/store/pg/row.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline {

Committer::Committer(db::Database& database, std::string pipeline, std::string source, std::vector<std::string> destinations,
                     db::RetryPolicy retry, PositionOrder precedes, const EntityDeclaration& entity)
    : pipeline_(std::move(pipeline)),
      retry_(retry),
      writer_(pipeline_, std::move(source), destinations, std::move(precedes), entity),
      sessions_(database, pipeline_, writer_.create_stage()),
      mode_(std::make_unique<CommitEachBatch>(pipeline_, retry_, writer_, sessions_)) {}

Committer::~Committer() {
  mode_.reset();  // rolls a dry run back; the sessions release the locks after, on the idle connections
}

void Committer::own_partition(const PartitionLeases& leases, PartitionLease lease) {
  sessions_.own_partition(leases, lease);
}

pqxx::connection& Committer::connection() {
  pqxx::connection& first = sessions_.session(0);
  if (sessions_.two()) sessions_.session(1);
  return first;
}

pqxx::connection* Committer::open_connection() const { return sessions_.open_first(); }

void Committer::begin_dry_run() {
  pqxx::connection* first = open_connection();
  if (!first) throw std::logic_error("Committer::begin_dry_run: no connection");
  auto dry_run = std::make_unique<DryRun>(*first, writer_, sessions_);
  dry_run_ = dry_run.get();
  mode_ = std::move(dry_run);
}

pqxx::transaction_base& Committer::dry_run_transaction() {
  if (!dry_run_) throw std::logic_error("Committer::dry_run_transaction: not a dry run");
  return dry_run_->transaction();
}

void Committer::stage_batches_ahead() {
  sessions_.use_two();
  mode_ = std::make_unique<StagingAhead>(pipeline_, retry_, writer_, sessions_);
}

StagedBatch Committer::stage_ahead(const BatchInput& batch) { return mode_->stage_ahead(batch); }

BatchResult Committer::commit(const BatchInput& batch, const QuarantineOrigin& origin, std::int64_t run_id) {
  return mode_->commit(batch, origin, run_id);
}

StagedBatch CommitMode::stage_ahead(const BatchInput&) { return nullptr; }

StagedBatch StagingAhead::stage_ahead(const BatchInput& batch) {
  if (batch.plan.versions.empty()) return nullptr;
  const std::size_t index = sessions_.session_of(batch.batch_no);
  try {
    auto staged = std::make_unique<pqxx::work>(sessions_.session(index));
    writer_.stage(*staged, batch);
    return staged;
  } catch (const std::runtime_error& error) {
    // A database's error (or PipelineBusy) meets the commit's retries there. A logic error (a
    // transaction still open on the session: the stages' hand-over broken) is not caught.
    spdlog::warn("batch {}: staging ahead failed, the commit stages it: {}", batch.batch_no, error.what());
    return nullptr;
  }
}

CommitEachBatch::CommitEachBatch(const std::string& pipeline, db::RetryPolicy retry, const BatchWriter& writer,
                                 CommitSessions& sessions)
    : writer_(writer), sessions_(sessions), pipeline_(pipeline), retry_(retry) {}

BatchResult CommitEachBatch::commit(const BatchInput& batch, const QuarantineOrigin& origin, std::int64_t run_id) {
  StagedBatch staged = batch.staged ? std::move(*batch.staged) : nullptr;
  const std::size_t index = sessions_.session_of(batch.batch_no);
  BatchResult result;
  bool first = true;
  db::with_retries(retry_, "batch " + std::to_string(batch.batch_no) + " of pipeline " + pipeline_, [&] {
    if (!first) {
      sessions_.forget_if_lost(index);  // reconnected by session(); an open one keeps its lock
      if (auto committed = read_back(index, run_id, batch.batch_no)) {
        spdlog::warn("batch {} had committed before the connection was lost; not applying it again",
                     batch.batch_no);
        result = std::move(*committed);
        return;
      }
    }
    first = false;
    result = attempt(batch, origin, run_id, std::move(staged));
  });
  return result;
}

std::optional<BatchResult> CommitEachBatch::read_back(std::size_t session_index, std::int64_t run_id, int batch_no) {
  pqxx::nontransaction txn(sessions_.session(session_index));
  const auto rows = txn.exec_params(std::string(sql::kCommitReadBackBatch), run_id, batch_no);
  if (rows.empty()) return std::nullopt;
  BatchResult result;
  result.recovered = true;
  // The ledger's count columns are named as the outcomes are.
  const db::Row counts(rows[0]);
  for (const Outcome outcome : kAllOutcomes) {
    result.counts[outcome] = counts.get<std::uint64_t>(std::string(to_string(outcome)).c_str());
  }
  return result;
}

void Committer::record_files(const std::vector<FileMark>& marks, const std::vector<std::string>& seen,
                             std::int64_t run_id) {
  if (marks.empty() && seen.empty()) return;
  db::with_retries(retry_, "the files read by run " + std::to_string(run_id) + " of pipeline " + pipeline_, [&] {
    sessions_.forget_if_lost(0);
    pqxx::work txn(sessions_.session(0));
    sessions_.fence(txn, run_id);
    writer_.record_marks(txn, marks, run_id);
    writer_.record_seen(txn, seen);
    txn.commit();
  });
}

BatchResult CommitEachBatch::attempt(const BatchInput& batch, const QuarantineOrigin& origin, std::int64_t run_id,
                                     StagedBatch staged) {
  const bool staged_ahead = staged != nullptr;
  std::unique_ptr<pqxx::work> txn = std::move(staged);
  if (!txn) txn = std::make_unique<pqxx::work>(sessions_.session(sessions_.session_of(batch.batch_no)));
  // A partition's batch commits only while its worker owns the partition; the fence's row lock
  // orders the batch before a taker's epoch bump or after it (sql/lease/fence.sql). Another
  // run's batch commits only while its run is running (sql/commit/fence_run.sql). A batch
  // staged ahead holds no row lock yet: its stage is its session's own temporary table.
  sessions_.fence(*txn, run_id);

  // 1. Stage the batch, unless it was staged ahead.
  if (!staged_ahead) writer_.stage(*txn, batch);
  // 2. Compare, upsert, sequence and log the changes in one statement.
  std::vector<std::optional<EntityRecord>> stored_rows;
  BatchResult result = writer_.apply(*txn, batch, stored_rows);
  if (batch.admit) batch.admit(result.counts);  // throws: txn is rolled back as it unwinds
  // 3. and 4.
  writer_.record(*txn, batch, origin, run_id, result, stored_rows);
  failpoint("before_commit");
  txn->commit();
  return result;
}

DryRun::DryRun(pqxx::connection& first, const BatchWriter& writer, const CommitSessions& sessions)
    : writer_(writer), sessions_(sessions), transaction_(first, "dry run") {}

BatchResult DryRun::commit(const BatchInput& batch, const QuarantineOrigin&, std::int64_t run_id) {
  // Never retried: a retry would start over on a new transaction without the batches before.
  // A batch staged ahead is not continued (a dry run does not stage ahead): dropped, it rolls back.
  if (batch.staged) batch.staged->reset();
  // A partition's batch still checks its worker's ownership; a dry run records no run whose
  // row could fence it.
  if (sessions_.partitioned()) sessions_.fence(transaction_, run_id);
  writer_.stage(transaction_, batch);
  std::vector<std::optional<EntityRecord>> stored_rows;
  BatchResult result = writer_.apply(transaction_, batch, stored_rows);
  if (batch.admit) batch.admit(result.counts);
  // The upserts and logged changes stay in the transaction for the next batch to see; the stage
  // is emptied here, as COMMIT empties it in a real run.
  writer_.empty_stage(transaction_);
  return result;
}

}  // namespace tidemark::pipeline
