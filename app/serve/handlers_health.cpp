// GET /healthz, /readyz and /metrics: the probes, answered on a lane of their own.
#include <vector>

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "app/serve/api.hpp"
#include "app/serve/handlers.hpp"
#include "pipeline/views/views.hpp"

namespace tidemark::app::serve {

namespace {

// Refreshes tidemark_view_lag_seconds for the config's views just before a scrape.
void export_view_lag(ApiContext& context) {
  const std::vector<std::string> views = context.config.destination_names_with(&app::config::DestinationCapabilities::view);
  if (views.empty()) return;
  try {
    context.pool.with_connection("measuring view lag", [&](pqxx::connection& connection) {
      for (const auto& [view, health] : pipeline::views::view_health(connection, views)) {
        context.metrics.view_lag_seconds.Add({{"view", view}}).Set(health.lag_seconds);
        context.metrics.view_dead_events.Add({{"view", view}}).Set(static_cast<double>(health.dead));
      }
    });
  } catch (const std::exception& error) {
    // A scrape still answers with everything else; the gauge keeps its last value.
    spdlog::warn("could not measure view lag: {}", error.what());
  }
}

}  // namespace

HttpResponse health(ApiContext&, const HttpRequest&, const Route&) {
  return json_response(200, boost::json::object{{"status", "ok"}});
}

HttpResponse ready(ApiContext& context, const HttpRequest&, const Route&) {
  try {
    context.pool.with_connection("checking the database", [](pqxx::connection& connection) {
      pqxx::nontransaction txn(connection);
      txn.exec("SELECT 1");
    });
  } catch (const std::exception& error) {
    return error_response(503, std::string("database unreachable: ") + error.what());
  }
  if (context.options.not_ready) {
    if (const std::string problem = context.options.not_ready(); !problem.empty()) return error_response(503, problem);
  }
  return json_response(200, boost::json::object{{"status", "ready"}});
}

HttpResponse scrape_metrics(ApiContext& context, const HttpRequest&, const Route&) {
  export_view_lag(context);
  return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", context.metrics.serialize(), {}};
}

}  // namespace tidemark::app::serve
