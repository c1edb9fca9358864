#include "pipeline/store/committer.hpp"

#include <spdlog/spdlog.h>

#include "pipeline/store/pg/copy_writer.hpp"
#include "pipeline/store/pg/pg_text.hpp"
#include "pipeline/core/failpoint.hpp"
#include "pipeline/core/utf8.hpp"
#include "pipeline/core/validate.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline {

using db::append_copy_text;

namespace {

constexpr char kHex[] = "0123456789abcdef";

// Two lowercase hex digits per byte.
void append_hex(std::string& out, std::string_view bytes) {
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
  }
}

void append_nullable(std::string& line, const std::optional<std::string>& value) {
  if (value) {
    append_copy_text(line, *value);
  } else {
    line += "\\N";
  }
}

}  // namespace

std::string escape_bytes(std::string_view bytes) {
  std::string text;
  text.reserve(bytes.size());
  while (!bytes.empty()) {
    const std::size_t length = storable_utf8_length(bytes);
    if (length == 0) {
      text += "\\x";
      append_hex(text, bytes.substr(0, 1));
      bytes.remove_prefix(1);
      continue;
    }
    if (bytes[0] == '\\') text += '\\';
    text.append(bytes.substr(0, length));
    bytes.remove_prefix(length);
  }
  return text;
}

std::string unescape_bytes(std::string_view text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string bytes;
  bytes.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '\\') {
      bytes += '\\';
      ++i;
    } else if (text[i] == '\\' && i + 3 < text.size() && text[i + 1] == 'x' && hex(text[i + 2]) >= 0 &&
               hex(text[i + 3]) >= 0) {
      bytes += static_cast<char>(hex(text[i + 2]) * 16 + hex(text[i + 3]));
      i += 3;
    } else {
      bytes += text[i];
    }
  }
  return bytes;
}

std::string stored_position(const Checkpoint& checkpoint) {
  return Checkpoint{escape_bytes(checkpoint.file), checkpoint.offset}.to_string();
}

std::optional<Checkpoint> parse_stored_position(std::string_view text) {
  auto checkpoint = Checkpoint::parse(text);
  if (checkpoint) checkpoint->file = unescape_bytes(checkpoint->file);
  return checkpoint;
}

Committer::Committer(std::string url, std::string pipeline, std::string source, std::vector<std::string> destinations,
                     db::RetryPolicy retry)
    : url_(std::move(url)),
      pipeline_(std::move(pipeline)),
      source_(escape_bytes(source)),
      destinations_literal_(db::text_array_literal(destinations)),
      retry_(retry) {}

pqxx::connection& Committer::connection() {
  if (!connection_ || !connection_->is_open()) {
    connection_ = db::connect(url_);
    pqxx::nontransaction setup(*connection_);
    // One active run per pipeline: a session-level advisory lock, taken again on every
    // reconnect (a lost connection loses the lock) and released by PostgreSQL if we die.
    if (!setup.exec_params1(std::string(sql::kRunTryLockPipeline), pipeline_)[0].as<bool>()) {
      const auto holder = setup.exec_params(std::string(sql::kRunPipelineLockHolder), pipeline_);
      std::string who = "another process";
      if (!holder.empty()) {
        who = "backend pid " + std::string(holder[0][0].c_str()) + " (" + holder[0][1].c_str() +
              ", connected since " + holder[0][2].c_str() + ")";
      }
      connection_.reset();
      throw PipelineBusy("pipeline '" + pipeline_ + "' is already running: " + who +
                         " holds it. Wait for that run to finish, then run again.");
    }
    setup.exec(std::string(sql::kCommitCreateStage));
  }
  return *connection_;
}

Committer::~Committer() {
  if (!connection_ || !connection_->is_open()) return;
  try {
    pqxx::nontransaction txn(*connection_);
    txn.exec_params(std::string(sql::kRunUnlockPipeline), pipeline_);
  } catch (const std::exception&) {
    // The lock goes with the session anyway; only the next run's wait is at stake.
  }
}

BatchResult Committer::commit(const BatchInput& batch, const QuarantineOrigin& origin, std::int64_t run_id) {
  BatchResult result;
  bool first = true;
  db::with_retries(retry_, "batch " + std::to_string(batch.batch_no) + " of pipeline " + pipeline_, [&] {
    if (!first) {
      connection_.reset();  // a failed attempt may have left the connection unusable
      if (auto committed = read_back(run_id, batch.batch_no)) {
        spdlog::warn("batch {} had committed before the connection was lost; not applying it again",
                     batch.batch_no);
        result = std::move(*committed);
        return;
      }
    }
    first = false;
    result = attempt(batch, origin, run_id);
  });
  return result;
}

std::optional<BatchResult> Committer::read_back(std::int64_t run_id, int batch_no) {
  pqxx::nontransaction txn(connection());
  const auto rows = txn.exec_params(std::string(sql::kCommitReadBackBatch), run_id, batch_no);
  if (rows.empty()) return std::nullopt;
  BatchResult result;
  result.recovered = true;
  for (std::size_t i = 0; i < kOutcomeCount; ++i) {
    result.counts.by_outcome[i] = rows[0][static_cast<int>(i)].as<std::uint64_t>();
  }
  return result;
}

BatchResult Committer::attempt(const BatchInput& batch, const QuarantineOrigin& origin, std::int64_t run_id) {
  const BatchPlan& plan = batch.plan;
  pqxx::work txn(connection());

  // 1. Stage every version (not only candidates: a stored conflict is found for each).
  if (!plan.versions.empty()) {
    db::CopyWriter stage(txn, "tidemark_stage",
                         {"ord", "transaction_id", "source_revision", "amount", "account_id", "occurred_at",
                          "candidate"});
    std::string line;
    for (std::size_t v = 0; v < plan.versions.size(); ++v) {
      const Record& record = std::get<Record>(batch.validated[plan.versions[v].first_index]);
      line.clear();
      line += std::to_string(v);
      line += '\t';
      append_copy_text(line, record.transaction_id);
      line += '\t';
      line += std::to_string(record.source_revision);
      line += '\t';
      line += record.amount.to_string();
      line += '\t';
      append_nullable(line, record.account_id);
      line += '\t';
      line += record.occurred_at_us ? format_timestamp(*record.occurred_at_us) : std::string("\\N");
      line += '\t';
      line += plan.versions[v].candidate ? 't' : 'f';
      stage.write_line(line);
    }
    stage.complete();
  }

  // 2. Compare, upsert, sequence and outbox in one statement.
  std::vector<StoredVerdict> verdicts(plan.versions.size());
  BatchResult result;
  if (!plan.versions.empty()) {
    const auto rows = txn.exec_params(std::string(sql::kCommitApplyBatch), pipeline_, destinations_literal_);
    for (const auto& row : rows) {
      verdicts[row[0].as<std::size_t>()] = outcome_from_string(row[1].c_str());
      result.outbox_rows = row[2].as<std::uint64_t>();
    }
  }
  result.outcomes = resolve_outcomes(plan, verdicts);
  for (Outcome outcome : result.outcomes) ++result.counts[outcome];
  if (batch.admit) batch.admit(result.counts);  // throws: txn is rolled back as it unwinds

  // 3. Quarantine every invalid and conflicting record, as received.
  if (result.counts[Outcome::kInvalid] + result.counts[Outcome::kConflict] > 0) {
    db::CopyWriter quarantine(txn, "tidemark_quarantine_stage",
                              {"pipeline", "source", "reason", "detail", "transaction_id", "source_revision",
                               "raw", "raw_bytes", "format", "csv_header", "position", "run_id"});
    std::string line;
    for (std::size_t i = 0; i < result.outcomes.size(); ++i) {
      const Outcome outcome = result.outcomes[i];
      if (outcome != Outcome::kInvalid && outcome != Outcome::kConflict) continue;
      const DecodedRecord& decoded = batch.decoded[i];
      const auto* record = std::get_if<Record>(&batch.validated[i]);
      std::string detail;
      if (record == nullptr) {
        detail = std::get<Rejection>(batch.validated[i]).detail;
      } else {
        detail = "transaction_id " + record->transaction_id + " revision " +
                 std::to_string(record->source_revision) +
                 " has a different payload than another record or the stored row of the same revision";
      }
      bool replaced = false;
      bool ignored = false;
      const std::string raw = storable_text(decoded.raw, replaced);
      line.clear();
      append_copy_text(line, pipeline_);
      line += '\t';
      append_copy_text(line, source_);
      line += '\t';
      line += to_string(outcome);
      line += '\t';
      append_copy_text(line, storable_text(detail, ignored));
      line += '\t';
      if (record != nullptr) {
        append_copy_text(line, record->transaction_id);
        line += '\t' + std::to_string(record->source_revision);
      } else {
        // An invalid record still shows the key it claimed, when it had one, for searching.
        if (decoded.transaction_id && !decoded.transaction_id->text.empty()) {
          append_copy_text(line, storable_text(decoded.transaction_id->text, ignored));
        } else {
          line += "\\N";
        }
        line += "\t\\N";
      }
      line += '\t';
      append_copy_text(line, raw);
      line += '\t';
      if (replaced) {
        line += "\\\\x";
        append_hex(line, decoded.raw);
      } else {
        line += "\\N";
      }
      line += '\t';
      append_copy_text(line, origin.format);
      line += '\t';
      const auto header = origin.csv_header ? origin.csv_header(decoded.position.file) : std::nullopt;
      append_nullable(line, header ? std::optional<std::string>(escape_bytes(*header)) : std::nullopt);
      line += '\t';
      SourcePosition position = decoded.position;
      position.file = escape_bytes(position.file);
      append_copy_text(line, position.describe());
      line += '\t' + std::to_string(run_id);
      quarantine.write_line(line);
    }
    quarantine.complete();
    txn.exec(std::string(sql::kCommitQuarantine));
  }

  if (batch.releases_quarantine_id) {
    txn.exec_params(std::string(sql::kRunMarkReleased), *batch.releases_quarantine_id, batch.released_by,
                    std::string(to_string(result.outcomes.at(0))));
  }

  // 4. Ledger, then the checkpoint, last.
  const OutcomeCounts& c = result.counts;
  txn.exec_params(std::string(sql::kCommitRecordBatch), pipeline_, run_id, batch.batch_no, source_,
                  batch.start_position, batch.end ? stored_position(*batch.end) : batch.start_position,
                  c.input(), c[Outcome::kInserted], c[Outcome::kUpdated], c[Outcome::kUnchanged],
                  c[Outcome::kStale], c[Outcome::kSuperseded], c[Outcome::kDuplicate], c[Outcome::kInvalid],
                  c[Outcome::kConflict]);
  if (batch.end) {
    // The name's bytes, as hex, order checkpoints exactly as the source reads its files.
    std::string file_hex;
    append_hex(file_hex, batch.end->file);
    txn.exec_params(std::string(sql::kCommitAdvanceCheckpoint), pipeline_, source_, stored_position(*batch.end),
                    escape_bytes(batch.end->file), batch.end->offset, run_id, file_hex);
  }
  failpoint("before_commit");
  txn.commit();
  return result;
}

}  // namespace tidemark::pipeline
