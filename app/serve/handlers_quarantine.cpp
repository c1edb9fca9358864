// GET /v1/quarantine, GET /v1/quarantine/{id}, POST /v1/quarantine/{id}/release.
#include <stdexcept>
#include <vector>

#include <boost/json.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include "app/serve/api.hpp"
#include "app/serve/handlers.hpp"
#include "app/status/status.hpp"
#include "app/wiring/registry.hpp"
#include "pipeline/core/utf8.hpp"
#include "pipeline/run/quarantine_release.hpp"
#include "pipeline/store/pg/row.hpp"
#include "pipeline/store/entity_schema.hpp"
#include "pipeline/store/pipeline_entity.hpp"
#include "sql/statements.hpp"

namespace tidemark::app::serve {

namespace {

constexpr std::int64_t kDefaultQuarantineLimit = 100;
constexpr std::int64_t kMaxQuarantineLimit = 1000;

}  // namespace

HttpResponse list_quarantine(ApiContext& context, const HttpRequest& request, const Route&) {
  const auto url = boost::urls::parse_origin_form(request.target);
  std::string pipeline;
  std::int64_t limit = kDefaultQuarantineLimit;
  std::int64_t after = 0;
  for (const auto& param : url->params()) {
    if (param.key == "pipeline") {
      pipeline = param.value;
    } else if (param.key == "limit") {
      const auto parsed = positive_integer(param.value);
      if (!parsed || *parsed > kMaxQuarantineLimit) {
        return error_response(400, "limit must be an integer from 1 to " + std::to_string(kMaxQuarantineLimit));
      }
      limit = *parsed;
    } else if (param.key == "after") {
      const auto parsed = positive_integer(param.value);
      if (!parsed) return error_response(400, "after must be a positive integer (an entry id, from `next`)");
      after = *parsed;
    } else {
      return error_response(400, "unknown query parameter \"" + param.key + "\" (expected pipeline, limit, after)");
    }
  }
  std::string entries;  // the serialised entries, comma-separated
  std::int64_t listed = 0;
  std::int64_t last_id = 0;
  bool more = false;
  context.pool.with_connection("reading the quarantine", [&](pqxx::connection& connection) {
    pqxx::nontransaction txn(connection);
    entries.clear();
    listed = 0;
    more = false;
    // One row more than the limit tells whether another page follows.
    const auto rows = txn.exec_params(std::string(sql::kServeQuarantineList), pipeline, limit + 1, after);
    for (const auto& listed_row : rows) {
      if (listed == limit || (listed > 0 && entries.size() >= kListPageBytes)) {
        more = true;
        break;
      }
      const pipeline::db::Row row(listed_row);
      boost::json::object entry = boost::json::parse(row.text("document")).as_object();
      std::string raw(entry["raw"].as_string());
      if (raw.size() > kListRawBytes) {
        // Never inside a UTF-8 sequence: back to the start of the one the cut would split.
        raw.resize(pipeline::utf8_prefix_length(raw, kListRawBytes));
      }
      entry["raw"] = raw;
      entry["raw_truncated"] = row.get<std::size_t>("raw_length") > raw.size();
      status::redact_urls_shown(entry);
      if (listed++ > 0) entries += ',';
      entries += boost::json::serialize(entry);
      last_id = row.get<std::int64_t>("id");
    }
  });
  boost::json::value next = nullptr;
  if (more) {
    std::string link = "/v1/quarantine?limit=" + std::to_string(limit) + "&after=" + std::to_string(last_id);
    if (!pipeline.empty()) link += "&pipeline=" + boost::urls::encode(pipeline, boost::urls::unreserved_chars);
    next = link;
  }
  return HttpResponse{200, "application/json",
                      "{\"entries\":[" + entries + "],\"next\":" + boost::json::serialize(next) + "}\n", {}};
}

HttpResponse show_quarantine_entry(ApiContext& context, const HttpRequest&, const Route& route) {
  const std::string& id = route.segments[2];
  const auto entry_id = positive_integer(id);
  if (!entry_id) return error_response(404, "no quarantine entry " + id);
  std::optional<boost::json::object> entry;
  context.pool.with_connection("reading a quarantine entry", [&](pqxx::connection& connection) {
    pqxx::nontransaction txn(connection);
    entry.reset();
    const auto rows = txn.exec_params(std::string(sql::kServeQuarantineShow), *entry_id);
    if (rows.empty()) return;
    entry = boost::json::parse(pipeline::db::Row(rows[0]).text("document")).as_object();
    status::redact_urls_shown(*entry);
    // Beside the record, what its entity's table stores for its key, read by the declaration
    // its table was last brought up to date to (else the config's): null when the record has
    // no valid key or its entity is known to neither.
    boost::json::value stored = nullptr;
    const auto& key = entry->at("transaction_id");
    const std::string entity_name(entry->at("entity").as_string());
    const auto recorded = pipeline::db::recorded_entity(txn, entity_name);
    const pipeline::EntityDeclaration* entity = recorded ? &*recorded : context.config.find_entity(entity_name);
    if (key.is_string() && entity != nullptr) {
      const auto row = pipeline::stored_row(txn, *entity, std::string(key.as_string()));
      boost::json::value columns = row.json ? boost::json::parse(*row.json) : boost::json::value(nullptr);
      // The stored row's revision under one name for every entity: a conflict entry of the
      // revision stored can only conflict again on release, and the console says so.
      boost::json::value revision = nullptr;
      if (const auto* found = columns.is_object() ? columns.as_object().if_contains(entity->revision) : nullptr) {
        revision = *found;
      }
      stored = boost::json::object{
          {"table", row.table}, {"row", std::move(columns)}, {"revision", std::move(revision)}};
    }
    (*entry)["stored"] = std::move(stored);
  });
  if (!entry) return error_response(404, "no quarantine entry " + id);
  return json_response(200, *entry);
}

HttpResponse release_quarantine_entry(ApiContext& context, const HttpRequest&, const Route& route) {
  const std::string& id = route.segments[2];
  const auto entry_id = positive_integer(id);
  if (!entry_id) return error_response(404, "no quarantine entry " + id);
  std::optional<std::string> pipeline;
  context.pool.with_connection("reading a quarantine entry", [&](pqxx::connection& connection) {
    pqxx::nontransaction txn(connection);
    const auto rows = txn.exec_params(std::string(sql::kServeQuarantineEntry), *entry_id);
    if (rows.empty()) return;
    pipeline = pipeline::db::Row(rows[0]).text("pipeline");
  });
  if (!pipeline) return error_response(404, "no quarantine entry " + id);
  const std::vector<std::string> destinations = context.config.destination_names(*pipeline);
  // Validated again by the current declaration of its pipeline's entity (the built-in one for
  // a pipeline the config no longer has), as `quarantine release` does.
  const pipeline::EntityDeclaration& entity = context.config.pipelines.contains(*pipeline)
                                                  ? context.config.entity_of(*pipeline)
                                                  : pipeline::built_in_transaction_entity();
  // Released already, quarantined as another entity than its pipeline loads now, a table that
  // cannot hold its entity, or the pipeline held by another run or release (ReleaseBusy names
  // it): each a conflict the router answers 409 with its message.
  const pipeline::ReleaseResult result = pipeline::release_quarantined(
      context.pool, *entry_id, destinations, "api", quarantine_decoder(), {}, entity);
  const std::string outcome(pipeline::to_string(result.outcome));
  // The release is a one-record batch in the ledger: the exposed counts follow it.
  pipeline::OutcomeCounts counts;
  counts[result.outcome] = 1;
  context.pipeline_metrics.batch_committed(*pipeline, counts);
  return json_response(200, boost::json::object{{"quarantine_id", *entry_id}, {"run_id", result.run_id}, {"outcome", outcome}});
}

}  // namespace tidemark::app::serve
