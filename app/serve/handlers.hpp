#pragma once
// The handlers of serve's HTTP API, by area (handlers_runs.cpp, handlers_quarantine.cpp,
// handlers_outbox.cpp, handlers_views.cpp, handlers_health.cpp, handlers_ui.cpp). Each is a plain function of the request and
// its route, reached through the route table in api.cpp once the router has checked the
// method and the token. They block (database): they run on a worker thread.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "app/config/config.hpp"
#include "app/serve/front_door.hpp"
#include "app/serve/http_message.hpp"
#include "app/serve/pipeline_metrics.hpp"
#include "app/serve/run_queue.hpp"
#include "metrics/metrics.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::app::serve {

struct ApiOptions;

// What the handlers work with; owned by the Service.
struct ApiContext {
  const app::config::Config& config;
  RunQueue& runs;
  pipeline::db::Database& pool;
  metrics::Metrics& metrics;
  PipelineMetrics& pipeline_metrics;
  const ApiOptions& options;
};

// The answers every handler builds its own from.
HttpResponse json_response(int status, const boost::json::value& body);
HttpResponse error_response(int status, const std::string& message);
// A path or query integer > 0, else nullopt.
std::optional<std::int64_t> positive_integer(std::string_view text);
// One stored JSON document by its id (a path segment): the column `document` of
// `statement`'s row for that id, or 404 "`missing` ID" (for an id that is not a positive integer too).
HttpResponse stored_document(ApiContext& context, const std::string& id, std::string_view statement,
                             std::string_view what, const std::string& missing);

// handlers_runs.cpp: run triggers and run and pipeline status.
HttpResponse trigger_run(ApiContext& context, const HttpRequest& request, const Route& route);
HttpResponse run_status(ApiContext& context, const HttpRequest& request, const Route& route);
HttpResponse list_pipelines(ApiContext& context, const HttpRequest& request, const Route& route);
// GET /v1/runs?pipeline=&status=&limit=&before=: newest first, a page at a time.
HttpResponse list_runs(ApiContext& context, const HttpRequest& request, const Route& route);
// GET /v1/pipelines/{name}: what `tidemark status --json` says of it (app/status).
HttpResponse show_pipeline(ApiContext& context, const HttpRequest& request, const Route& route);
// tidemark_webhook_requests_total: every result's series from the start; one more `result`.
void add_webhook_series(metrics::Metrics& metrics);
void count_webhook(metrics::Metrics& metrics, const std::string& result);

// handlers_quarantine.cpp
HttpResponse list_quarantine(ApiContext& context, const HttpRequest& request, const Route& route);
HttpResponse show_quarantine_entry(ApiContext& context, const HttpRequest& request, const Route& route);
HttpResponse release_quarantine_entry(ApiContext& context, const HttpRequest& request, const Route& route);

// handlers_outbox.cpp: GET /v1/outbox?status=&destination=&limit=&after_id= (oldest first, a
// page at a time) and POST /v1/outbox/{id}/retry (a dead event only: 200, 404, 409).
HttpResponse list_outbox(ApiContext& context, const HttpRequest& request, const Route& route);
HttpResponse retry_outbox_event(ApiContext& context, const HttpRequest& request, const Route& route);

// handlers_views.cpp: GET /v1/views (what `tidemark views list` shows), and
// GET /v1/views/account_balance/accounts/{id}?min_sequence=S (200 once applied, else 409).
HttpResponse list_views(ApiContext& context, const HttpRequest& request, const Route& route);
HttpResponse account_view(ApiContext& context, const HttpRequest& request, const Route& route);

// handlers_ui.cpp: GET /ui/… answers the console's static files (app/serve/ui/, embedded at
// build time) with a strict Content-Security-Policy; /ui redirects to /ui/. No token: the
// files hold no data, the page asks for the token and sends it with each API request.
HttpResponse console_file(ApiContext& context, const HttpRequest& request, const Route& route);

// handlers_health.cpp: /healthz, /readyz, /metrics.
HttpResponse health(ApiContext& context, const HttpRequest& request, const Route& route);
HttpResponse ready(ApiContext& context, const HttpRequest& request, const Route& route);
HttpResponse scrape_metrics(ApiContext& context, const HttpRequest& request, const Route& route);

}  // namespace tidemark::app::serve
