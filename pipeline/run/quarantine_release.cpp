#include "pipeline/run/quarantine_release.hpp"

#include <set>
#include <stdexcept>

#include "pipeline/core/plan.hpp"
#include "pipeline/store/committer.hpp"
#include "pipeline/store/entity_sql.hpp"
#include "pipeline/run/run_controller.hpp"
#include "pipeline/core/utf8.hpp"
#include "pipeline/core/validate.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline {

ReleaseResult release_quarantined(const std::string& database_url, std::int64_t id,
                                  const std::vector<std::string>& destinations, const std::string& released_by,
                                  const RecordDecoder& decoder, const db::RetryPolicy& retry,
                                  const EntityDeclaration& entity) {
  std::string pipeline;
  std::string raw;
  std::string format;
  std::string decode_context;
  std::string position;
  {
    auto connection = db::connect(database_url);
    pqxx::nontransaction txn(*connection);
    const auto rows = txn.exec_params(
        std::string(sql::kRunQuarantinedForRelease),
        id);
    if (rows.empty()) throw std::invalid_argument("quarantine entry " + std::to_string(id) + " does not exist");
    if (!rows[0][4].is_null()) {
      throw std::invalid_argument("quarantine entry " + std::to_string(id) + " was released at " +
                                  rows[0][4].c_str() + " (it became " + rows[0][5].c_str() + ")");
    }
    pipeline = rows[0][0].c_str();
    const pqxx::binarystring bytes(rows[0][1]);
    raw = bytes.str();
    format = rows[0][2].c_str();
    // Stored escaped (it need not be valid text): decode with the source's own bytes.
    decode_context = unescape_bytes(rows[0][3].c_str());
    position = rows[0][6].c_str();
    if (const std::string quarantined_as = rows[0][7].c_str(); quarantined_as != entity.name) {
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
  ensure_table(committer.connection(), entity);
  RunRequest request;
  request.pipeline = pipeline;
  request.reason = "quarantine release " + std::to_string(id);
  const std::int64_t run_id = start_run(committer.connection(), request);
  try {
    // The ledger row and a new quarantine entry keep the entry's position; their source is
    // "quarantine" (the record is not read from its source again).
    BatchInput batch{decoded, validated, plan, 1, position, std::nullopt, id, released_by, position};
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
