#include "pipeline/run/quarantine_release.hpp"

#include <chrono>
#include <set>
#include <stdexcept>

#include "pipeline/core/plan.hpp"
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

// The entry as release needs it (sql/run/quarantined_for_release.sql); a conflict when it
// does not exist or was released already, naming the run that released it.
pqxx::row open_entry(pqxx::connection& connection, std::int64_t id) {
  pqxx::nontransaction txn(connection);
  const auto rows = txn.exec_params(std::string(sql::kRunQuarantinedForRelease), id);
  if (rows.empty()) throw Error(ErrorKind::kConflict, "quarantine entry " + std::to_string(id) + " does not exist");
  const pqxx::row entry = rows[0];
  if (!entry[4].is_null()) {
    const std::string run = entry[8].is_null() ? "" : std::string(" in run ") + entry[8].c_str();
    throw Error(ErrorKind::kConflict, "quarantine entry " + std::to_string(id) + " was released at " +
                                          entry[4].c_str() + run + " (it became " + entry[5].c_str() + ")");
  }
  return entry;
}

// Takes the pipeline's locks on the committer's first session. Another release of the entry
// that came first, or a run of the pipeline, holds them: the release is refused naming that
// run. A holder that has recorded no run (between taking the locks and starting its run, or
// a release refused under them) is waited for; then the entry is read again, and the locks
// tried again, a few times.
pqxx::connection& hold_pipeline(Committer& committer, const std::string& database_url, const std::string& pipeline,
                                std::int64_t id) {
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    try {
      return committer.connection();
    } catch (const PipelineBusy& busy) {
      auto connection = db::connect(database_url);
      {
        pqxx::nontransaction txn(*connection);
        const auto holder = txn.exec_params(std::string(sql::kRunPipelineRunningRun), pipeline);
        if (!holder.empty()) {
          const std::int64_t run_id = holder[0][0].as<std::int64_t>();
          throw ReleaseBusy("quarantine entry " + std::to_string(id) + " is not released: run " +
                                std::to_string(run_id) + " (" + holder[0][1].c_str() + ") holds pipeline " +
                                pipeline + "; once it has finished, release the entry again if it is still open",
                            run_id);
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

ReleaseResult release_quarantined(const std::string& database_url, std::int64_t id,
                                  const std::vector<std::string>& destinations, const std::string& released_by,
                                  const RecordDecoder& decoder, const db::RetryPolicy& retry,
                                  const EntityDeclaration& entity) {
  std::string pipeline;
  std::string raw;
  std::string format;
  std::string decode_context;
  std::string position;
  std::string source;
  {
    auto connection = db::connect(database_url);
    const pqxx::row entry = open_entry(*connection, id);
    pipeline = entry[0].c_str();
    const pqxx::binarystring bytes(entry[1]);
    raw = bytes.str();
    format = entry[2].c_str();
    // Stored escaped (it need not be valid text): decode with the source's own bytes.
    decode_context = unescape_bytes(entry[3].c_str());
    position = entry[6].c_str();
    source = entry[9].c_str();
    db::keep_pipeline_entity(*connection, pipeline, entity, false);
    if (const std::string quarantined_as = entry[7].c_str(); quarantined_as != entity.name) {
      throw ReleaseEntityMismatch("quarantine entry " + std::to_string(id) + " holds a record of entity '" +
                                  quarantined_as + "', but pipeline " + pipeline + " loads entity '" + entity.name +
                                  "' now: it is not released, as validating it as '" + entity.name +
                                  "' would load it into " + entity.table +
                                  ". Release it with a config whose pipeline loads '" + quarantined_as +
                                  "', or leave it quarantined");
    }
  }

  const RecordChecker checker(entity);
  std::vector<DecodedRecord> decoded{
      decoder.decode(format, decode_context, raw, "quarantine-" + std::to_string(id), checker.layout())};
  std::vector<Checked> validated{checker.check(decoded.front())};
  const BatchPlan plan = plan_batch(validated);

  Committer committer(database_url, pipeline, "quarantine", destinations, retry, nullptr, entity);
  pqxx::connection& connection = hold_pipeline(committer, database_url, pipeline, id);
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
    finish_run(committer.open_connection(), database_url, run_id, "succeeded", "");
    Outcome outcome = Outcome::kInvalid;
    for (Outcome o : kAllOutcomes) {
      if (result.counts[o] > 0) outcome = o;
    }
    return {run_id, outcome};
  } catch (const std::exception& error) {
    finish_run(committer.open_connection(), database_url, run_id, "failed", error.what());
    throw;
  }
}

StoredRow stored_row(pqxx::transaction_base& txn, const EntityDeclaration& entity, const std::string& key) {
  StoredRow stored{entity.table, std::nullopt};
  const std::string table = db::quote_identifier(entity.table);
  std::set<std::string> present;
  for (const auto& row : txn.exec_params(std::string(sql::kRunTableColumns), table)) present.insert(row[0].c_str());
  if (present.empty()) return stored;  // no table: nothing was ever stored
  std::string columns = db::quote_identifier(entity.key) + ", " + db::quote_identifier(entity.revision);
  for (const auto& column : db::value_columns(entity)) {
    if (!present.contains(column.name)) continue;
    const std::string name = db::quote_identifier(column.name);
    // numeric as text: the JSON keeps its scale (10.50, not 10.5), as payloads carry decimals.
    columns += ", " + name + (column.type.starts_with("numeric") ? "::text AS " + name : "");
  }
  const auto rows = txn.exec_params("SELECT row_to_json(r)::text FROM (SELECT " + columns + " FROM " + table +
                                        " WHERE " + db::quote_identifier(entity.key) + " = $1) r",
                                    key);
  if (!rows.empty()) stored.json = rows[0][0].c_str();
  return stored;
}

}  // namespace tidemark::pipeline
