#include "pipeline/store/batch_writer.hpp"

#include <stdexcept>

#include "pipeline/core/error.hpp"
#include "pipeline/store/committer.hpp"
#include "pipeline/store/entity_sql.hpp"
#include "pipeline/store/outbox.hpp"
#include "pipeline/store/pg/copy_writer.hpp"
#include "pipeline/store/pg/pg_text.hpp"
#include "pipeline/store/pg/row.hpp"
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

BatchWriter::BatchWriter(std::string pipeline, std::string source, const std::vector<std::string>& destinations,
                         PositionOrder precedes, const EntityDeclaration& entity)
    : pipeline_(std::move(pipeline)),
      source_(std::move(source)),
      destinations_literal_(db::text_array_literal(destinations)),
      precedes_(std::move(precedes)),
      entity_(entity) {
  db::EntitySql generated = db::build_entity_sql(entity_);
  stage_table_ = std::move(generated.stage_table);
  stage_columns_ = std::move(generated.stage_columns);
  create_stage_ = std::move(generated.create_stage);
  apply_batch_ = std::move(generated.apply_batch);
}

// Every version (not only candidates: a stored conflict is found for each), each value in its
// canonical form, which is also its column type's text form.
void BatchWriter::stage(pqxx::transaction_base& txn, const BatchInput& batch) const {
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

BatchResult BatchWriter::apply(pqxx::transaction_base& txn, const BatchInput& batch,
                               std::vector<std::optional<EntityRecord>>& stored_rows) const {
  const BatchPlan& plan = batch.plan;
  std::vector<StoredVerdict> verdicts(plan.versions.size());
  stored_rows.assign(plan.versions.size(), std::nullopt);
  BatchResult result;
  if (!plan.versions.empty()) {
    const auto rows = txn.exec_params(apply_batch_, pipeline_, destinations_literal_);
    // A row per version of the batch: each column is looked up by its name once per result,
    // not once per row (as db::Row would).
    const auto ord = rows.column_number("ord");
    const auto verdict = rows.column_number("verdict");
    const auto changes_logged = rows.column_number("changes_logged");
    for (const auto& row : rows) {
      const auto v = row[ord].as<std::size_t>();
      verdicts[v] = outcome_from_string(row[verdict].c_str());
      result.changes_logged = row[changes_logged].as<std::uint64_t>();
      if (verdicts[v] == Outcome::kConflict) stored_rows[v] = stored_row(row, changes_logged + 1);
    }
  }
  result.outcomes = resolve_outcomes(plan, verdicts);
  for (Outcome outcome : result.outcomes) ++result.counts[outcome];
  return result;
}

void BatchWriter::empty_stage(pqxx::transaction_base& txn) const {
  txn.exec("TRUNCATE " + db::quote_identifier(stage_table_));
}

void BatchWriter::record(pqxx::transaction_base& txn, const BatchInput& batch, const QuarantineOrigin& origin,
                         std::int64_t run_id, const BatchResult& result,
                         const std::vector<std::optional<EntityRecord>>& stored_rows) const {
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
    quarantine(txn, batch, origin, run_id, result, stored_rows);
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
    if (stored.empty() || precedes_(Position{db::Row(stored[0]).text("position")}, *batch.end)) {
      txn.exec_params(std::string(sql::kCommitAdvanceCheckpoint), pipeline_, source_, batch.end->text, run_id);
    }
  }
  // Wakes the relays that LISTEN (pipeline/relay): PostgreSQL delivers it at the commit.
  if (result.changes_logged > 0) notify_relays(txn);
}

void BatchWriter::quarantine(pqxx::transaction_base& txn, const BatchInput& batch, const QuarantineOrigin& origin,
                             std::int64_t run_id, const BatchResult& result,
                             const std::vector<std::optional<EntityRecord>>& stored_rows) const {
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

EntityRecord BatchWriter::stored_row(const pqxx::row& row, pqxx::row::size_type first_value) const {
  // After (ord, verdict, changes_logged): each value column of the stored row, canonical.
  EntityRecord stored;
  const auto value = [&](std::size_t column) -> std::optional<std::string> {
    const pqxx::field field = row[static_cast<pqxx::row::size_type>(first_value + column)];
    if (field.is_null()) return std::nullopt;
    return std::string(field.c_str(), field.size());
  };
  for (std::size_t i = 0; i < entity_.fields.size(); ++i) stored.values.push_back(value(i));
  if (entity_.extra_fields == ExtraFields::kKeep) stored.extra = value(entity_.fields.size());
  return stored;
}

std::string BatchWriter::conflict_detail(const BatchInput& batch,
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

void BatchWriter::record_marks(pqxx::transaction_base& txn, const std::vector<FileMark>& marks,
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

void BatchWriter::record_seen(pqxx::transaction_base& txn, const std::vector<std::string>& seen) const {
  if (!seen.empty()) txn.exec_params(std::string(sql::kFilesSeen), pipeline_, source_, db::text_array_literal(seen));
}

}  // namespace tidemark::pipeline
