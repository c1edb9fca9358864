#include "pipeline/store/committer.hpp"

#include <stdexcept>

#include <spdlog/spdlog.h>

#include "pipeline/store/pg/copy_writer.hpp"
#include "pipeline/store/entity_sql.hpp"
#include "pipeline/store/outbox.hpp"
#include "pipeline/store/pg/pg_text.hpp"
#include "pipeline/core/failpoint.hpp"
#include "pipeline/core/utf8.hpp"
#include "pipeline/core/validate.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline {

using db::append_copy_text;

namespace {

void append_nullable(std::string& line, const std::optional<std::string>& value) {
  if (value) {
    append_copy_text(line, *value);
  } else {
    line += "\\N";
  }
}

}  // namespace

Committer::Committer(std::string url, std::string pipeline, std::string source, std::vector<std::string> destinations,
                     db::RetryPolicy retry, PositionOrder precedes, const EntityDeclaration& entity)
    : url_(std::move(url)),
      pipeline_(std::move(pipeline)),
      source_(std::move(source)),
      destinations_literal_(db::text_array_literal(destinations)),
      retry_(retry),
      precedes_(std::move(precedes)),
      entity_(entity) {
  db::EntitySql generated = db::build_entity_sql(entity_);
  stage_table_ = std::move(generated.stage_table);
  stage_columns_ = std::move(generated.stage_columns);
  create_stage_ = std::move(generated.create_stage);
  apply_batch_ = std::move(generated.apply_batch);
}

void Committer::own_partition(const PartitionLeases& leases, PartitionLease lease) {
  if (sessions_[0]) throw std::logic_error("Committer::own_partition: after connection()");
  leases_ = &leases;
  lease_ = lease;
}

pqxx::connection& Committer::session(std::size_t index) {
  std::unique_ptr<pqxx::connection>& connection = sessions_.at(index);
  if (!connection || !connection->is_open()) {
    connection = db::connect(url_);
    try {
      if (leases_) {
        leases_->register_session(*connection);
      } else if (index == 1) {
        take_pipeline_lock(*connection, pipeline_, PipelineLock::kSecond);
      } else {
        take_pipeline_lock(*connection, pipeline_);
        if (!staging_ahead_) take_pipeline_lock(*connection, pipeline_, PipelineLock::kSecond);
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

pqxx::connection& Committer::connection() {
  pqxx::connection& first = session(0);
  if (staging_ahead_) session(1);
  return first;
}

pqxx::connection* Committer::open_connection() const {
  return sessions_[0] && sessions_[0]->is_open() ? sessions_[0].get() : nullptr;
}

std::size_t Committer::session_of(int batch_no) const {
  return staging_ahead_ ? static_cast<std::size_t>(batch_no - 1) % 2 : 0;
}

Committer::~Committer() {
  dry_run_.reset();  // rolls the dry run back; the locks are released after, on the idle connections
  if (leases_) return;
  if (sessions_[0]) release_pipeline_lock(*sessions_[0], pipeline_);
  pqxx::connection* second = staging_ahead_ ? sessions_[1].get() : sessions_[0].get();
  if (second) release_pipeline_lock(*second, pipeline_, PipelineLock::kSecond);
}

void Committer::begin_dry_run() {
  if (!open_connection()) throw std::logic_error("Committer::begin_dry_run: no connection");
  dry_run_ = std::make_unique<pqxx::work>(*sessions_[0], "dry run");
}

pqxx::transaction_base& Committer::dry_run_transaction() {
  if (!dry_run_) throw std::logic_error("Committer::dry_run_transaction: not a dry run");
  return *dry_run_;
}

void Committer::stage_batches_ahead() {
  if (sessions_[0]) throw std::logic_error("Committer::stage_batches_ahead: after connection()");
  staging_ahead_ = true;
}

StagedBatch Committer::stage_ahead(const BatchInput& batch) {
  if (!staging_ahead_ || batch.plan.versions.empty()) return nullptr;
  const std::size_t index = session_of(batch.batch_no);
  try {
    auto staged = std::make_unique<pqxx::work>(session(index));
    stage(*staged, batch);
    return staged;
  } catch (const std::runtime_error& error) {
    // A database's error (or PipelineBusy) meets the commit's retries there. A logic error (a
    // transaction still open on the session: the stages' hand-over broken) is not caught.
    spdlog::warn("batch {}: staging ahead failed, the commit stages it: {}", batch.batch_no, error.what());
    return nullptr;
  }
}

BatchResult Committer::commit(const BatchInput& batch, const QuarantineOrigin& origin, std::int64_t run_id) {
  StagedBatch staged = batch.staged ? std::move(*batch.staged) : nullptr;
  // A retry would start over on a new transaction without the batches before: the dry run ends.
  if (dry_run_) return attempt(batch, origin, run_id, nullptr);
  const std::size_t index = session_of(batch.batch_no);
  BatchResult result;
  bool first = true;
  db::with_retries(retry_, "batch " + std::to_string(batch.batch_no) + " of pipeline " + pipeline_, [&] {
    if (!first) {
      // A lost connection is reopened by session(). An open one (a serialization failure
      // or a deadlock, rolled back) is kept, and with it the pipeline's lock: a new session
      // could not take the lock until the old backend has exited (PipelineBusy), and another
      // run could take it in between.
      if (sessions_[index] && !sessions_[index]->is_open()) sessions_[index].reset();
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

EntityRecord Committer::stored_row(const pqxx::row& row) const {
  // After (ord, verdict, outbox_rows): each value column of the stored row, canonical.
  EntityRecord stored;
  constexpr int kFirstValue = 3;
  const auto value = [&](std::size_t column) -> std::optional<std::string> {
    const pqxx::field field = row[static_cast<int>(kFirstValue + column)];
    if (field.is_null()) return std::nullopt;
    return std::string(field.c_str(), field.size());
  };
  for (std::size_t i = 0; i < entity_.fields.size(); ++i) stored.values.push_back(value(i));
  if (entity_.extra_fields == ExtraFields::kKeep) stored.extra = value(entity_.fields.size());
  return stored;
}

std::string Committer::conflict_detail(const BatchInput& batch,
                                       const std::vector<std::optional<EntityRecord>>& stored_rows,
                                       std::size_t index) const {
  const auto& record = std::get<EntityRecord>(batch.validated[index]);
  std::string detail = entity_.key + " " + record.key + " revision " +
                       std::to_string(record.revision) + " differs from ";
  if (const auto other = batch.plan.conflicts_with[index]) {
    SourcePosition position = batch.decoded[*other].position;
    position.file = escape_bytes(position.file);
    detail += "the record at " + position.describe() + " of the same revision: ";
    detail += describe_differences(entity_, record, std::get<EntityRecord>(batch.validated[*other]), "there");
  } else {
    const std::optional<EntityRecord>& stored = stored_rows.at(batch.plan.version_of[index].value());
    detail += "the stored row of the same revision: ";
    detail += stored ? describe_differences(entity_, record, *stored, "stored") : std::string("(not read)");
  }
  return detail;
}

std::optional<BatchResult> Committer::read_back(std::size_t session_index, std::int64_t run_id, int batch_no) {
  pqxx::nontransaction txn(session(session_index));
  const auto rows = txn.exec_params(std::string(sql::kCommitReadBackBatch), run_id, batch_no);
  if (rows.empty()) return std::nullopt;
  BatchResult result;
  result.recovered = true;
  for (std::size_t i = 0; i < kOutcomeCount; ++i) {
    result.counts.by_outcome[i] = rows[0][static_cast<int>(i)].as<std::uint64_t>();
  }
  return result;
}

void Committer::fence_run(pqxx::transaction_base& txn, std::int64_t run_id) const {
  const auto rows = txn.exec_params(std::string(sql::kCommitFenceRun), run_id);
  const std::string status = rows.empty() ? "gone" : rows[0][0].c_str();
  if (status == "running") return;
  throw RunEnded("run " + std::to_string(run_id) + " of pipeline " + pipeline_ + " is no longer running (its status is " +
                 status + "): it lost its database sessions, and another run of the pipeline started meanwhile. "
                 "It commits no more batches; those it committed stand");
}

void Committer::fence(pqxx::transaction_base& txn, std::int64_t run_id) const {
  if (leases_) {
    leases_->fence(txn, lease_);
  } else {
    fence_run(txn, run_id);
  }
}

void Committer::record_marks(pqxx::transaction_base& txn, const std::vector<FileMark>& marks,
                             std::int64_t run_id) const {
  if (marks.empty()) return;
  // Parallel arrays, one statement for the batch's files (libpqxx 6.4 has no array parameters).
  std::vector<std::string> files, fingerprints;
  // Device and inode numbers are stored as bigint, bit for bit (stored_marks casts them back).
  std::vector<std::int64_t> bytes, devices, inodes;
  for (const FileMark& mark : marks) {
    files.push_back(mark.file);
    bytes.push_back(static_cast<std::int64_t>(mark.bytes));
    devices.push_back(static_cast<std::int64_t>(mark.device));
    inodes.push_back(static_cast<std::int64_t>(mark.inode));
    fingerprints.push_back(mark.fingerprint);
  }
  txn.exec_params(std::string(sql::kFilesRecordMarks), pipeline_, source_, db::text_array_literal(files),
                  db::bigint_array_literal(bytes), db::bigint_array_literal(devices),
                  db::bigint_array_literal(inodes), db::text_array_literal(fingerprints), run_id);
}

void Committer::record_files(const std::vector<FileMark>& marks, const std::vector<std::string>& seen,
                             std::int64_t run_id) {
  if (marks.empty() && seen.empty()) return;
  db::with_retries(retry_, "the files read by run " + std::to_string(run_id) + " of pipeline " + pipeline_, [&] {
    if (sessions_[0] && !sessions_[0]->is_open()) sessions_[0].reset();
    pqxx::work txn(session(0));
    fence(txn, run_id);
    record_marks(txn, marks, run_id);
    if (!seen.empty()) txn.exec_params(std::string(sql::kFilesSeen), pipeline_, source_, db::text_array_literal(seen));
    txn.commit();
  });
}

// Every version (not only candidates: a stored conflict is found for each), each value in its
// canonical form, which is also its column type's text form.
void Committer::stage(pqxx::transaction_base& txn, const BatchInput& batch) const {
  const BatchPlan& plan = batch.plan;
  if (plan.versions.empty()) return;
  db::CopyWriter copy(txn, stage_table_, stage_columns_);
  const bool keeps_extra = entity_.extra_fields == ExtraFields::kKeep;
  std::string line;
  for (std::size_t v = 0; v < plan.versions.size(); ++v) {
    const EntityRecord& record = std::get<EntityRecord>(batch.validated[plan.versions[v].first_index]);
    line.clear();
    line += std::to_string(v);
    line += '\t';
    append_copy_text(line, record.key);
    line += '\t';
    line += std::to_string(record.revision);
    for (const std::optional<std::string>& value : record.values) {
      line += '\t';
      append_nullable(line, value);
    }
    if (keeps_extra) {
      line += '\t';
      append_nullable(line, record.extra);
    }
    line += '\t';
    line += plan.versions[v].candidate ? 't' : 'f';
    copy.write_line(line);
  }
  copy.complete();
}

BatchResult Committer::attempt(const BatchInput& batch, const QuarantineOrigin& origin, std::int64_t run_id,
                               StagedBatch staged) {
  const BatchPlan& plan = batch.plan;
  const std::size_t index = session_of(batch.batch_no);
  const bool staged_ahead = staged != nullptr;
  std::unique_ptr<pqxx::work> own = std::move(staged);
  if (!own && !dry_run_) own = std::make_unique<pqxx::work>(session(index));
  pqxx::transaction_base& txn = dry_run_ ? *dry_run_ : *own;
  // A partition's batch commits only while its worker owns the partition; the fence's row lock
  // orders the batch before a taker's epoch bump or after it (sql/lease/fence.sql). Another
  // run's batch commits only while its run is running (sql/commit/fence_run.sql). A batch
  // staged ahead holds no row lock yet: its stage is its session's own temporary table.
  if (leases_ || !dry_run_) fence(txn, run_id);

  // 1. Stage the batch, unless it was staged ahead.
  if (!staged_ahead) stage(txn, batch);

  // 2. Compare, upsert, sequence and outbox in one statement.
  std::vector<StoredVerdict> verdicts(plan.versions.size());
  // Per version in conflict with the stored row: that row, for the quarantine's detail.
  std::vector<std::optional<EntityRecord>> stored_rows(plan.versions.size());
  BatchResult result;
  if (!plan.versions.empty()) {
    const auto rows = txn.exec_params(apply_batch_, pipeline_, destinations_literal_);
    for (const auto& row : rows) {
      const auto v = row[0].as<std::size_t>();
      verdicts[v] = outcome_from_string(row[1].c_str());
      result.outbox_rows = row[2].as<std::uint64_t>();
      if (verdicts[v] == Outcome::kConflict) stored_rows[v] = stored_row(row);
    }
  }
  result.outcomes = resolve_outcomes(plan, verdicts);
  for (Outcome outcome : result.outcomes) ++result.counts[outcome];
  if (batch.admit) batch.admit(result.counts);  // throws: txn is rolled back as it unwinds
  if (dry_run_) {
    // The upserts and outbox rows stay in the dry run's transaction for the next batch to
    // see; the stage is emptied here, as COMMIT empties it in a real run.
    txn.exec("TRUNCATE " + db::quote_identifier(stage_table_));
    return result;
  }

  // Released first: rejected again, the record is quarantined at the entry's own position,
  // which the unique index quarantine_once allows once among the open entries only. A release
  // reads the entry under the pipeline's lock before it gets here; an entry released
  // meanwhile all the same rolls the batch back rather than count the record twice.
  if (batch.releases_quarantine_id) {
    const auto released = txn.exec_params(std::string(sql::kRunMarkReleased), *batch.releases_quarantine_id,
                                          batch.released_by, std::string(to_string(result.outcomes.at(0))), run_id);
    if (released.empty()) {
      throw Error(ErrorKind::kConflict, "quarantine entry " + std::to_string(*batch.releases_quarantine_id) +
                                            " was released by another run meanwhile");
    }
  }

  // 3. Quarantine every invalid and conflicting record, as received.
  if (result.counts[Outcome::kInvalid] + result.counts[Outcome::kConflict] > 0) {
    db::CopyWriter quarantine(txn, "tidemark_quarantine_stage",
                              {"pipeline", "source", "reason", "detail", "transaction_id", "source_revision",
                               "raw", "raw_bytes", "format", "decode_context", "position", "run_id", "entity",
                               "field"});
    std::string line;
    for (std::size_t i = 0; i < result.outcomes.size(); ++i) {
      const Outcome outcome = result.outcomes[i];
      if (outcome != Outcome::kInvalid && outcome != Outcome::kConflict) continue;
      const DecodedRecord& decoded = batch.decoded[i];
      const auto* record = std::get_if<EntityRecord>(&batch.validated[i]);
      const auto* rejection = std::get_if<Rejection>(&batch.validated[i]);
      const std::string detail = record == nullptr ? rejection->detail : conflict_detail(batch, stored_rows, i);
      bool replaced = false;
      bool ignored = false;
      const std::string raw = storable_text(decoded.raw, replaced);
      line.clear();
      append_copy_text(line, pipeline_);
      line += '\t';
      append_copy_text(line, batch.quarantine_source ? *batch.quarantine_source : source_);
      line += '\t';
      line += to_string(outcome);
      line += '\t';
      append_copy_text(line, storable_text(detail, ignored));
      line += '\t';
      if (record != nullptr) {
        append_copy_text(line, record->key);
        line += '\t' + std::to_string(record->revision);
      } else {
        // An invalid record still shows the key it claimed, when it had one, and its revision
        // when that field was valid, for searching.
        if (const auto& key = decoded.field(kKeyField); key && !key->text.empty()) {
          append_copy_text(line, storable_text(key->text, ignored));
        } else {
          line += "\\N";
        }
        const std::optional<std::int64_t> revision = valid_revision(decoded);
        line += revision ? '\t' + std::to_string(*revision) : std::string("\t\\N");
      }
      line += '\t';
      append_copy_text(line, raw);
      line += '\t';
      if (replaced) {
        db::append_copy_bytea(line, decoded.raw);
      } else {
        line += "\\N";
      }
      line += '\t';
      append_copy_text(line, origin.format);
      line += '\t';
      // Stored escaped: what a decoder needs need not be valid text.
      if (decoded.decode_context) append_copy_text(line, escape_bytes(*decoded.decode_context));
      line += '\t';
      if (batch.quarantine_position) {
        append_copy_text(line, *batch.quarantine_position);
      } else {
        SourcePosition position = decoded.position;
        position.file = escape_bytes(position.file);
        append_copy_text(line, position.describe());
      }
      line += '\t' + std::to_string(run_id);
      line += '\t';
      append_copy_text(line, entity_.name);
      line += '\t';
      if (rejection != nullptr && rejection->field) {
        append_copy_text(line, storable_text(*rejection->field, ignored));
      } else {
        line += "\\N";
      }
      quarantine.write_line(line);
    }
    quarantine.complete();
    txn.exec(std::string(sql::kCommitQuarantine));
  }

  // 4. Ledger, the files read, then the checkpoint, last.
  const OutcomeCounts& c = result.counts;
  txn.exec_params(std::string(sql::kCommitRecordBatch), pipeline_, run_id, batch.batch_no, source_,
                  batch.start_position, batch.end ? batch.end->text : batch.start_position,
                  c.input(), c[Outcome::kInserted], c[Outcome::kUpdated], c[Outcome::kUnchanged],
                  c[Outcome::kStale], c[Outcome::kSuperseded], c[Outcome::kDuplicate], c[Outcome::kInvalid],
                  c[Outcome::kConflict]);
  record_marks(txn, batch.marks, run_id);
  if (batch.end) {
    if (!precedes_) throw std::logic_error("Committer: a batch with an end position needs the source's order");
    // Never backwards, by the source's own order: the stored row is locked, so nothing can
    // move it between the comparison and the write.
    const auto stored = txn.exec_params(std::string(sql::kCommitLockCheckpoint), pipeline_, source_);
    if (stored.empty() || precedes_(Position{stored[0][0].c_str()}, *batch.end)) {
      txn.exec_params(std::string(sql::kCommitAdvanceCheckpoint), pipeline_, source_, batch.end->text, run_id);
    }
  }
  // Wakes the relays that LISTEN (pipeline/relay): PostgreSQL delivers it at the commit.
  if (result.outbox_rows > 0) relay::notify_relays(txn);
  failpoint("before_commit");
  txn.commit();
  return result;
}

}  // namespace tidemark::pipeline
