#include "pipeline/run/quarantine_release.hpp"

#include <chrono>
#include <set>
#include <stdexcept>

#include "pipeline/core/plan.hpp"
#include "pipeline/store/pg/row.hpp"
#include "pipeline/store/committer.hpp"
#include "pipeline/store/entity_sql.hpp"
#include "pipeline/store/pipeline_entity.hpp"
#include "pipeline/run/run_controller.hpp"
#include "pipeline/core/utf8.hpp"
#include "pipeline/core/validate.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline {

namespace {

// How long a refused release waits for the pipeline's holder to be done when the holder has
// recorded no run yet (between taking the lock and starting its run: milliseconds).
constexpr std::chrono::seconds kUnnamedHolderWait{10};

// A row of sql/run/quarantined_for_release.sql.
struct QuarantinedEntry {
  std::string pipeline;
  std::string raw;  // the exact bytes received
  std::string format;
  std::string decode_context;  // stored escaped (it need not be valid text)
  std::optional<std::string> released_at;
  std::string release_outcome;
  std::string position;
  std::string entity;
  std::optional<std::string> release_run_id;
  std::string source;
  static QuarantinedEntry read(const db::Row& row) {
    return {row.text("pipeline"),  row.bytes("raw"),
            row.text("format"),    row.text("decode_context"),
            row.optional<std::string>("released_at"), row.text("release_outcome"),
            row.text("position"),  row.text("entity"),
            row.optional<std::string>("release_run_id"), row.text("source")};
  }
};

// A row of sql/run/pipeline_running_run.sql.
struct RunningRun {
  std::int64_t id = 0;
  std::string reason;
  static RunningRun read(const db::Row& row) { return {row.get<std::int64_t>("id"), row.text("reason")}; }
};

// The entry as release needs it; a conflict when it does not exist or was released already,
// naming the run that released it.
QuarantinedEntry open_entry(pqxx::connection& connection, std::int64_t id) {
  pqxx::nontransaction txn(connection);
  const auto entry =
      db::read_first<QuarantinedEntry>(txn.exec_params(std::string(sql::kRunQuarantinedForRelease), id));
  if (!entry) throw Error(ErrorKind::kConflict, "quarantine entry " + std::to_string(id) + " does not exist");
  if (entry->released_at) {
    const std::string run = entry->release_run_id ? " in run " + *entry->release_run_id : "";
    throw Error(ErrorKind::kConflict, "quarantine entry " + std::to_string(id) + " was released at " +
                                          *entry->released_at + run + " (it became " + entry->release_outcome + ")");
  }
  return *entry;
}

// Takes the pipeline's locks on the committer's first session. Another release of the entry
// that came first, or a run of the pipeline, holds them: the release is refused naming that
// run. A holder that has recorded no run (between taking the locks and starting its run, or
// a release refused under them) is waited for; then the entry is read again, and the locks
// tried again, a few times.
pqxx::connection& hold_pipeline(Committer& committer, const db::Database& database, const std::string& pipeline,
                                std::int64_t id) {
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    try {
      return committer.connection();
    } catch (const PipelineBusy& busy) {
      // Its own connection, not a pooled one: the wait below takes and gives back the lock.
      auto connection = database.connect();
      {
        pqxx::nontransaction txn(*connection);
        const auto holder =
            db::read_first<RunningRun>(txn.exec_params(std::string(sql::kRunPipelineRunningRun), pipeline));
        if (holder) {
          throw ReleaseBusy("quarantine entry " + std::to_string(id) + " is not released: run " +
                                std::to_string(holder->id) + " (" + holder->reason + ") holds pipeline " + pipeline +
                                "; once it has finished, release the entry again if it is still open",
                            holder->id);
        }
      }
      if (attempt == kAttempts || !wait_for_pipeline_lock(*connection, pipeline, kUnnamedHolderWait)) {
        throw ReleaseBusy("quarantine entry " + std::to_string(id) + " is not released: " + busy.what(), 0);
      }
      open_entry(*connection, id);  // released by the holder: refused, naming its run
    }
  }
}

}  // namespace

ReleaseResult release_quarantined(db::Database& database, std::int64_t id,
                                  const std::vector<std::string>& destinations, const std::string& released_by,
                                  const RecordDecoder& decoder, const db::RetryPolicy& retry,
                                  const EntityDeclaration& entity) {
  std::string pipeline;
  std::string raw;
  std::string format;
  std::string decode_context;
  std::string position;
  std::string source;
  database.attempt([&](pqxx::connection& connection) {
    QuarantinedEntry entry = open_entry(connection, id);
    pipeline = std::move(entry.pipeline);
    raw = std::move(entry.raw);
    format = std::move(entry.format);
    // Stored escaped (it need not be valid text): decode with the source's own bytes.
    decode_context = unescape_bytes(entry.decode_context);
    position = std::move(entry.position);
    source = std::move(entry.source);
    db::keep_pipeline_entity(connection, pipeline, entity, false);
    if (const std::string& quarantined_as = entry.entity; quarantined_as != entity.name) {
      throw ReleaseEntityMismatch("quarantine entry " + std::to_string(id) + " holds a record of entity '" +
                                  quarantined_as + "', but pipeline " + pipeline + " loads entity '" + entity.name +
                                  "' now: it is not released, as validating it as '" + entity.name +
                                  "' would load it into " + entity.table +
                                  ". Release it with a config whose pipeline loads '" + quarantined_as +
                                  "', or leave it quarantined");
    }
  });

  const RecordChecker checker(entity);
  std::vector<DecodedRecord> decoded{
      decoder.decode(format, decode_context, raw, "quarantine-" + std::to_string(id), checker.layout())};
  std::vector<Checked> validated{checker.check(decoded.front())};
  const BatchPlan plan = plan_batch(validated);

  Committer committer(database, pipeline, "quarantine", destinations, retry, nullptr, entity);
  pqxx::connection& connection = hold_pipeline(committer, database, pipeline, id);
  // Every release of the pipeline's entries holds its lock from here to its end: one that
  // released this entry first has committed by now.
  open_entry(connection, id);
  ensure_table(connection, entity);
  RunRequest request;
  request.pipeline = pipeline;
  request.reason = "quarantine release " + std::to_string(id);
  const std::int64_t run_id = start_run(connection, request);
  try {
    // The ledger row and a new quarantine entry keep the entry's position; the ledger row's
    // source is "quarantine" (the record is not read from its source again), the new entry's
    // the entry's own, so that the record keeps one open entry when its source is replayed.
    BatchInput batch{decoded, validated, plan, 1, position, std::nullopt, id, released_by, position, source};
    const BatchResult result = committer.commit(batch, QuarantineOrigin{format}, run_id);
    finish_run(committer.open_connection(), database, run_id, "succeeded", "");
    Outcome outcome = Outcome::kInvalid;
    for (Outcome o : kAllOutcomes) {
      if (result.counts[o] > 0) outcome = o;
    }
    return {run_id, outcome};
  } catch (const std::exception& error) {
    finish_run(committer.open_connection(), database, run_id, "failed", error.what());
    throw;
  }
}

StoredRow stored_row(pqxx::transaction_base& txn, const EntityDeclaration& entity, const std::string& key) {
  StoredRow stored{entity.table, std::nullopt};
  const std::string table = db::quote_identifier(entity.table);
  std::set<std::string> present;
  for (const auto& row : txn.exec_params(std::string(sql::kRunTableColumns), table)) {
    present.insert(db::Row(row).text("attname"));
  }
  if (present.empty()) return stored;  // no table: nothing was ever stored
  std::string columns = db::quote_identifier(entity.key) + ", " + db::quote_identifier(entity.revision);
  for (const auto& column : db::value_columns(entity)) {
    if (!present.contains(column.name)) continue;
    const std::string name = db::quote_identifier(column.name);
    // numeric as text: the JSON keeps its scale (10.50, not 10.5), as payloads carry decimals.
    columns += ", " + name + (column.type.starts_with("numeric") ? "::text AS " + name : "");
  }
  const std::string statement =
      db::fill(sql::kRunStoredRow, {{"columns", columns}, {"table", table}, {"key", db::quote_identifier(entity.key)}});
  const auto rows = txn.exec_params(statement, key);
  if (!rows.empty()) stored.json = db::Row(rows[0]).text("json");
  return stored;
}

}  // namespace tidemark::pipeline
