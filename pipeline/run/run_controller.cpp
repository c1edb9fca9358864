#include "pipeline/run/run_controller.hpp"

#include <chrono>
#include <exception>
#include <stdexcept>
#include <variant>

#include <spdlog/spdlog.h>

#include "pipeline/core/failpoint.hpp"
#include "pipeline/core/plan.hpp"
#include "pipeline/run/stages.hpp"
#include "pipeline/store/committer.hpp"
#include "pipeline/store/entity_schema.hpp"
#include "pipeline/store/entity_sql.hpp"
#include "pipeline/store/pipeline_entity.hpp"
#include "pipeline/store/pg/row.hpp"
#include "pipeline/core/utf8.hpp"
#include "pipeline/core/validate.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline {

namespace {

using Clock = std::chrono::steady_clock;

// A batch read, validated and planned, waiting for its commit.
struct PreparedBatch {
  Clock::time_point started;
  std::vector<DecodedRecord> decoded;
  std::vector<Checked> validated;
  BatchPlan plan;
  Position end;
  std::vector<FileMark> marks;  // what it read of each file (Source::take_marks)
  StagedBatch staged;  // null when the commit stages it
};

}  // namespace

std::int64_t start_run(pqxx::connection& connection, const RunRequest& request) {
  pqxx::work txn(connection);
  if (!request.partition) txn.exec_params(std::string(sql::kRunFailAbandonedRuns), request.pipeline, request.run_id);
  std::int64_t run_id = 0;
  if (request.run_id) {
    txn.exec_params(std::string(sql::kRunResumeQueuedRun), *request.run_id);
    run_id = *request.run_id;
  } else {
    run_id = txn.exec_params1(
                    std::string(sql::kRunInsertRun),
                    request.pipeline, request.trigger, request.replay ? "replay" : "resume", request.request_id,
                    request.reason)[0]
                 .as<std::int64_t>();
  }
  if (request.partition) {
    const PartitionLeases& leases = *request.partition->leases;
    txn.exec_params(std::string(sql::kLeaseFailAbandonedRuns), request.pipeline,
                    leases.settings().owner_timeout.count(), run_id, leases.worker_id());
  }
  txn.commit();
  return run_id;
}

namespace {

void record_finish(pqxx::connection& connection, std::int64_t run_id, const std::string& status,
                   const std::string& error) {
  pqxx::work txn(connection);
  bool ignored = false;  // an error may quote a file name that is not UTF-8
  txn.exec_params(std::string(sql::kRunFinishRun), run_id, status, storable_text(error, ignored));
  txn.commit();
}

}  // namespace

void finish_run(pqxx::connection* healthy, db::Database& database, std::int64_t run_id, const std::string& status,
                const std::string& error) {
  if (healthy != nullptr) {
    try {
      record_finish(*healthy, run_id, status, error);
      return;
    } catch (const std::exception& broken) {
      // It looked open but was not (the server went away unnoticed): a fresh one below.
      spdlog::debug("run {}: recording its end on the run's connection failed ({}); reconnecting", run_id,
                    broken.what());
    }
  }
  // Retried: a pooled connection may be stale (the server restarted, which may be why the run failed).
  database.with_connection("recording the end of run " + std::to_string(run_id),
                           [&](pqxx::connection& connection) { record_finish(connection, run_id, status, error); });
}

// A declared entity's table, created or brought up to date (the built-in one's is a migration's).
void ensure_table(pqxx::connection& connection, const EntityDeclaration& entity) {
  if (entity.name == kBuiltInEntityName) return;
  const db::EntityTableChanges changes = db::ensure_entity_table(connection, entity);
  if (changes.created) spdlog::info("entity {}: table {} created", entity.name, entity.table);
  if (changes.adopted) spdlog::info("entity {}: table {} adopted", entity.name, entity.table);
  for (const std::string& column : changes.added_columns) {
    spdlog::info("entity {}: table {} gained column {}", entity.name, entity.table, column);
  }
  if (!changes.unused_columns.empty()) {
    std::string columns;
    for (const std::string& column : changes.unused_columns) columns += (columns.empty() ? "" : ", ") + column;
    spdlog::warn("entity {}: table {} has columns the declaration does not name, left unused: {}", entity.name,
                 entity.table, columns);
  }
}

namespace {

// A dry run's view of a declared entity's table (RunRequest::dry_run), compared read-only as
// ensure_table would find it: true when it does not exist yet (the dry run creates it in its
// own transaction, so the batches meet an empty table as a real run's would, and nothing is
// kept). EntitySchemaError when it cannot hold the declaration, and when it lacks columns.
bool dry_run_creates_table(pqxx::connection& connection, const EntityDeclaration& entity) {
  if (entity.name == kBuiltInEntityName) return false;
  const db::EntityTableCheck check = db::check_entity_table(connection, entity);
  if (!check.problems.empty()) throw db::schema_error(check.problems);
  if (!check.added_columns.empty()) {
    std::string columns;
    for (const std::string& column : check.added_columns) columns += (columns.empty() ? "" : ", ") + column;
    throw db::EntitySchemaError("entity " + entity.name + ": table " + entity.table + " lacks the column(s) " +
                                columns + " of the declaration; a dry run does not alter a table (that would "
                                "lock it against its readers until the dry run ends): a real run adds them");
  }
  if (!check.altered_columns.empty()) {
    std::string columns;
    for (const auto& altered : check.altered_columns) {
      columns += (columns.empty() ? "" : ", ") + altered.column + " (" + altered.from + " -> " + altered.to + ")";
    }
    throw db::EntitySchemaError("entity " + entity.name + ": table " + entity.table + " has column(s) " + columns +
                                " narrower than the declaration; a dry run does not alter a table (that would lock it "
                                "against its readers until the dry run ends): a real run widens them");
  }
  return !check.exists;
}

std::string describe(const OutcomeCounts& counts) {
  std::string text = "input " + std::to_string(counts.input());
  for (Outcome outcome : kAllOutcomes) text += " " + std::string(to_string(outcome)) + " " + std::to_string(counts[outcome]);
  return text;
}

}  // namespace

std::vector<FileMark> stored_marks(pqxx::connection& connection, const std::string& pipeline,
                                   const std::string& source) {
  pqxx::nontransaction txn(connection);
  std::vector<FileMark> marks;
  for (const auto& row : txn.exec_params(std::string(sql::kFilesStoredMarks), pipeline, source)) {
    const auto number = [&](const char* column) { return static_cast<std::uint64_t>(row[column].as<std::int64_t>()); };
    marks.push_back({row["file"].as<std::string>(), number("bytes"), number("device"), number("inode"),
                     row["fingerprint"].as<std::string>()});
  }
  return marks;
}

std::optional<Position> stored_checkpoint(pqxx::connection& connection, const std::string& pipeline,
                                          const std::string& source) {
  pqxx::nontransaction txn(connection);
  const auto rows = txn.exec_params(std::string(sql::kRunStoredCheckpoint), pipeline, source);
  if (rows.empty()) return std::nullopt;
  return Position{db::Row(rows[0]).text("position")};
}

RunSummary run_pipeline(const RunRequest& request) {
  if (request.database == nullptr) throw std::logic_error("run_pipeline: the request names no database");
  RunSummary summary;
  summary.pipeline = request.pipeline;
  std::unique_ptr<Source> source;
  std::unique_ptr<Committer> committer;
  std::int64_t run_id = 0;
  try {
    // The committer's first connection takes the pipeline lock; only then is the run
    // recorded, so a refused second run leaves no trace but its message.
    source = request.open_source();
    // The source orders its own positions; its order depends on nothing it reads, so the
    // commit may ask while the reader thread reads ahead.
    committer = std::make_unique<Committer>(
        *request.database, request.pipeline, source->identity(), request.destinations, request.retry,
        [&source](const Position& earlier, const Position& later) { return source->precedes(earlier, later); },
        request.entity);
    if (request.partition) committer->own_partition(*request.partition->leases, request.partition->lease);
    if (!request.dry_run) committer->stage_batches_ahead();
    pqxx::connection& connection = committer->connection();
    // Before anything is written: its first run records the pipeline's entity (not a dry run).
    db::keep_pipeline_entity(connection, request.pipeline, request.entity, !request.dry_run);
    const std::string& source_name = source->identity();
    std::optional<Position> resume;
    std::vector<FileMark> marks;  // the registry of files read, which a replay ignores
    summary.dry_run = request.dry_run;
    if (request.dry_run) {
      const bool create_table = dry_run_creates_table(connection, request.entity);
      resume = stored_checkpoint(connection, request.pipeline, source_name);
      if (!request.replay) marks = stored_marks(connection, request.pipeline, source_name);
      committer->begin_dry_run();
      if (create_table) {
        committer->dry_run_transaction().exec(db::build_entity_sql(request.entity).create_table);
        spdlog::info("entity {}: table {} does not exist yet; the dry run applies its batches to an empty one, "
                     "created in its transaction and not kept", request.entity.name, request.entity.table);
      }
    } else {
      ensure_table(connection, request.entity);
      run_id = start_run(connection, request);
      summary.run_id = run_id;
      resume = stored_checkpoint(connection, request.pipeline, source_name);
      if (!request.replay) marks = stored_marks(connection, request.pipeline, source_name);
    }
    // A file source reads on from its registry of files read.
    if (!request.replay && (resume || !marks.empty())) {
      source->restore_marks(std::move(marks));
      source->seek(resume.value_or(Position{}));
      spdlog::info("pipeline {}: resuming {} at {}", request.pipeline, source_name,
                   resume ? stored_position(*resume) : "its registry of files read");
      summary.rewritten_files = source->changed_files();
      for (const ChangedFile& changed : summary.rewritten_files) {
        spdlog::warn("pipeline {}: file '{}' of {} changed since an earlier run read it ({}); it is read again from "
                     "its start, where only what is new takes effect",
                     request.pipeline, changed.file, source_name, changed.change);
      }
      if (!summary.rewritten_files.empty() && !request.dry_run) {
        pqxx::work txn(connection);
        txn.exec_params(std::string(sql::kFilesRunRewritten), run_id, summary.rewritten_files.size());
        txn.commit();
      }
    } else {
      spdlog::info("pipeline {}: reading {} from the start{}", request.pipeline, source_name,
                   request.replay ? " (replay)" : "");
    }
    summary.checkpoint = resume ? stored_position(*resume) : "";
    const QuarantineOrigin origin{std::string(source->format())};
    const RecordChecker checker(request.entity);

    // Two stages on Asio (stages.hpp): one reads, decodes, validates, plans and stages batch
    // N+1 (on the committer's other session) while the other commits batch N. Commits stay
    // strictly sequential; at most one prepared batch waits between them, so memory stays
    // O(batch size). A reader error is rethrown once the batches read before it are committed.
    std::string start_position = stored_position(source->position());  // before the reader moves it
    // The producer's own: prepare runs on its thread only.
    std::size_t expected_records = 0;
    int prepared_batches = 0;
    const auto prepare = [&]() -> std::optional<PreparedBatch> {
      PreparedBatch batch;
      batch.started = Clock::now();
      // Room for as many records as the batch before held, the likely count: grown by
      // doubling instead, a batch of 10,000 records (192 bytes each) was copied through
      // blocks of up to 3 MiB, each freshly mapped (main() keeps such blocks mapped).
      batch.decoded.reserve(expected_records);
      if (source->read(batch.decoded, request.batch_size, request.max_batch_bytes) == 0) return std::nullopt;
      expected_records = batch.decoded.size();
      failpoint("after_decode");
      batch.validated.reserve(batch.decoded.size());
      for (DecodedRecord& record : batch.decoded) {
        batch.validated.push_back(checker.check(record));
        // A valid record's decoded fields are done with: its canonical values go on, and the
        // commit needs only its raw text and position. Freed here, they no longer double a
        // wide entity's memory per batch (docs/performance.md).
        if (std::holds_alternative<EntityRecord>(batch.validated.back())) record.release_fields();
      }
      batch.plan = plan_batch(batch.validated);
      batch.end = source->position();
      batch.marks = source->take_marks();
      // Staged now, the batch's COPY overlaps the commit of the batch before (docs/architecture.md).
      batch.staged = committer->stage_ahead({batch.decoded, batch.validated, batch.plan, ++prepared_batches});
      return batch;
    };

    // The run's rejected records (invalid + conflict) with those of the batch in hand.
    const auto check_rejections = [&](const OutcomeCounts& batch_counts) {
      OutcomeCounts total = summary.counts;
      total += batch_counts;
      const std::uint64_t rejected = total[Outcome::kInvalid] + total[Outcome::kConflict];
      if (!request.max_rejected->exceeded_by(rejected, total.input())) return;
      throw RejectionLimitExceeded(rejection_limit_message(
          *request.max_rejected,
          {request.pipeline, summary.batches + 1, total[Outcome::kInvalid], total[Outcome::kConflict], total.input(),
           summary.checkpoint, request.dry_run}));
    };

    const auto started = Clock::now();
    const auto commit = [&](PreparedBatch& next) {
      BatchInput batch{next.decoded, next.validated, next.plan, static_cast<int>(summary.batches) + 1,
                       start_position, next.end};
      if (request.max_rejected) batch.admit = [&](const OutcomeCounts& counts) { check_rejections(counts); };
      batch.staged = &next.staged;
      batch.marks = std::move(next.marks);
      const BatchResult result = committer->commit(batch, origin, run_id);
      failpoint("after_commit");
      ++summary.batches;
      summary.counts += result.counts;
      summary.checkpoint = stored_position(next.end);
      start_position = summary.checkpoint;
      if (request.on_batch) {
        request.on_batch({summary.batches, result.counts,
                          std::chrono::duration<double>(Clock::now() - next.started).count(), summary.checkpoint});
      }
      const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
      spdlog::info("pipeline {} batch {}: {} | {:.0f} records/s, at {}", request.pipeline, summary.batches,
                   describe(result.counts), seconds > 0 ? summary.counts.input() / seconds : 0.0, summary.checkpoint);
    };
    // A graceful stop is asked between batches: the batch in hand commits, the reader is cancelled.
    const auto stop_requested = [&] { return request.stop_requested && request.stop_requested->load(); };
    const bool source_done = run_two_stages<PreparedBatch>(prepare, commit, stop_requested) == StagesEnd::kDrained;
    // Cut short by a graceful stop: the source had more (the run's status is `stopped`).
    summary.stopped_early = !source_done;
    if (source_done) summary.pending_tail_bytes = source->pending_tail_bytes();
    // Drained, every batch read has committed: what the source read after the last one (files
    // emptied, or read again to no record) is stored now, with the files it found.
    if (source_done && !request.dry_run) committer->record_files(source->take_marks(), source->seen_files(), run_id);
    if (summary.pending_tail_bytes > 0) {
      spdlog::warn("pipeline {}: stopped before a last line without a newline ({} bytes after {}): it may still be "
                   "being written, so the next run reads it once the file has settled",
                   request.pipeline, summary.pending_tail_bytes,
                   summary.checkpoint.empty() ? "the start" : summary.checkpoint);
    }
    if (request.dry_run) {
      committer.reset();  // rolls every batch back, then releases the lock
      spdlog::info("pipeline {} dry run {}: {} {}, {}; nothing written", request.pipeline,
                   summary.stopped_early ? "stopped" : "done", summary.batches,
                   summary.batches == 1 ? "batch" : "batches", describe(summary.counts));
      return summary;
    }
    // On the committer's connection: the run went well, so it is healthy.
    finish_run(committer->open_connection(), *request.database, run_id,
               summary.stopped_early ? "stopped" : "succeeded", "");
    spdlog::info("pipeline {} run {} {}: {} {}, {}", request.pipeline, run_id,
                 summary.stopped_early ? "stopped (its committed batches are kept)" : "done", summary.batches,
                 summary.batches == 1 ? "batch" : "batches", describe(summary.counts));
    return summary;
  } catch (const std::exception& error) {
    if (run_id != 0) {
      try {
        // The committer's connection may be the reason the run failed: used only if still open.
        finish_run(committer ? committer->open_connection() : nullptr, *request.database, run_id, "failed",
                   error.what());
      } catch (const std::exception& also) {
        spdlog::error("could not record run {} as failed: {}", run_id, also.what());
      }
    }
    throw;
  }
}

}  // namespace tidemark::pipeline
