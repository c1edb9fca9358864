#include "app/status/status.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <boost/json.hpp>

#include "pipeline/core/error_text.hpp"
#include "pipeline/core/sink.hpp"
#include "pipeline/store/pg/row.hpp"
#include "pipeline/views/admin.hpp"
#include "sql/statements.hpp"

namespace tidemark::app::status {

namespace {

boost::json::array runs_in(pqxx::transaction_base& txn, const RunFilter& filter) {
  boost::json::array runs;
  for (const auto& row : txn.exec_params(std::string(sql::kStatusRuns), filter.pipeline, filter.status, filter.before,
                                         filter.limit)) {
    boost::json::object run = boost::json::parse(pipeline::db::Row(row).text("run")).as_object();
    redact_urls_shown(run);
    runs.push_back(std::move(run));
  }
  return runs;
}

struct EventCounts {
  std::int64_t pending = 0;
  std::int64_t dead = 0;
};

}  // namespace

void redact_urls_shown(boost::json::object& document) {
  for (const char* member : {"url", "position", "checkpoint", "error"}) {
    if (auto* value = document.if_contains(member); value != nullptr && value->is_string()) {
      *value = pipeline::redact_urls(value->as_string());
    }
  }
}

bool is_run_status(std::string_view status) {
  return std::find(std::begin(kRunStatuses), std::end(kRunStatuses), status) != std::end(kRunStatuses);
}

boost::json::array list_runs(pqxx::connection& connection, const RunFilter& filter) {
  pqxx::nontransaction txn(connection);
  return runs_in(txn, filter);
}

std::vector<std::string> known_pipelines(pqxx::connection& connection, const app::config::Config* config) {
  std::set<std::string> names;
  if (config != nullptr) {
    for (const auto& [name, pipeline] : config->pipelines) names.insert(name);
  }
  pqxx::nontransaction txn(connection);
  for (const auto& row : txn.exec(std::string(sql::kStatusKnownPipelines))) {
    names.insert(pipeline::db::Row(row).get<std::string>("pipeline"));
  }
  return {names.begin(), names.end()};
}

std::optional<boost::json::object> pipeline_status(pqxx::connection& connection, const app::config::Config* config,
                                                   const std::string& name) {
  const bool configured = config != nullptr && config->pipelines.count(name) != 0;
  if (!configured) {
    pqxx::nontransaction txn(connection);
    if (!pipeline::db::Row(txn.exec_params1(std::string(sql::kStatusPipelineKnown), name)).get<bool>("known")) {
      return std::nullopt;
    }
  }

  // configured: null without a config, which cannot tell.
  boost::json::object status{{"pipeline", name},
                             {"configured", config != nullptr ? boost::json::value(configured) : nullptr}};
  std::map<std::string, EventCounts> events;
  std::set<std::string> registered_views;
  {
    pqxx::nontransaction txn(connection);
    const auto last = runs_in(txn, RunFilter{name, "", 0, 1});
    status["last_run"] = last.empty() ? boost::json::value(nullptr) : last.front();
    const auto stored = boost::json::parse(
        pipeline::db::Row(txn.exec_params1(std::string(sql::kStatusPipeline), name)).text("document"));
    for (const auto& [key, value] : stored.as_object()) status[key] = value;
    for (auto& checkpoint : status["checkpoints"].as_array()) redact_urls_shown(checkpoint.as_object());
    for (const auto& listed : txn.exec_params(std::string(sql::kStatusDestinationEvents), name)) {
      const pipeline::db::Row row(listed);
      events[row.get<std::string>("destination")] =
          EventCounts{row.get<std::int64_t>("pending"), row.get<std::int64_t>("dead")};
    }
    for (const auto& row : txn.exec(std::string(sql::kStatusRegisteredViews))) {
      registered_views.insert(pipeline::db::Row(row).get<std::string>("name"));
    }
  }

  // The configured destinations in the order listed, then any other that still holds
  // undelivered events of the pipeline (removed from the config since). The kind is the
  // config's; else a registered view is a view; else unknown (most likely http). A view's
  // health is shown for the configured destinations that keep a view and the registered views.
  const auto configured_destinations =
      config != nullptr ? config->destinations() : std::map<std::string, app::config::DestinationConfig>{};
  const auto kind_of = [&](const std::string& destination) -> std::optional<std::string_view> {
    if (const auto found = configured_destinations.find(destination); found != configured_destinations.end()) {
      return found->second.kind();
    }
    if (registered_views.count(destination) != 0) return app::config::DestinationConfig{.options = app::config::ViewDestinationOptions{}}.kind();
    return std::nullopt;
  };
  const auto keeps_a_view = [&](const std::string& destination) {
    const auto found = configured_destinations.find(destination);
    return found != configured_destinations.end() ? found->second.capabilities().view
                                                  : registered_views.count(destination) != 0;
  };
  std::vector<std::string> names = configured ? config->destination_names(name) : std::vector<std::string>{};
  for (const auto& [destination, counts] : events) {
    if (std::find(names.begin(), names.end(), destination) == names.end()) names.push_back(destination);
  }
  std::vector<std::string> views;
  for (const auto& destination : names) {
    if (keeps_a_view(destination)) views.push_back(destination);
  }
  const auto health = pipeline::views::view_health(connection, views);

  boost::json::array destinations;
  for (const auto& destination : names) {
    const auto kind = kind_of(destination);
    const EventCounts counts = events.count(destination) != 0 ? events.at(destination) : EventCounts{};
    boost::json::object entry{{"name", destination},
                              {"kind", kind ? boost::json::value(*kind) : nullptr},
                              {"pending", counts.pending},
                              {"dead", counts.dead},
                              {"view", nullptr}};
    if (const auto found = health.find(destination); found != health.end()) {
      // Whole milliseconds, as every duration of the document: integers read the same in
      // every JSON library (Boost.JSON would print a double as 1.5E0).
      entry["view"] = {{"lag_ms", std::llround(found->second.lag_seconds * 1000)}, {"dead", found->second.dead}};
    }
    destinations.push_back(std::move(entry));
  }
  status["destinations"] = std::move(destinations);
  return status;
}

}  // namespace tidemark::app::status
