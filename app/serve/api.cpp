#include "app/serve/api.hpp"

#include <utility>

#include <spdlog/spdlog.h>

namespace tidemark::app::serve {

namespace {

// The route table: one line per route of front_door.cpp's route_of.
std::vector<RouteHandler> route_table(ApiContext& context) {
  using Handler = HttpResponse (*)(ApiContext&, const HttpRequest&, const Route&);
  const auto bind = [&context](Handler handler) {
    return [&context, handler](const HttpRequest& request, const Route& route) {
      return handler(context, request, route);
    };
  };
  return {
      {RouteKind::kHealth, bind(health)},
      {RouteKind::kReady, bind(ready)},
      {RouteKind::kMetrics, bind(scrape_metrics)},
      {RouteKind::kUi, bind(console_file)},
      {RouteKind::kTrigger, bind(trigger_run), /*answers_oversized_body=*/true},
      {RouteKind::kRun, bind(run_status)},
      {RouteKind::kPipelines, bind(list_pipelines)},
      {RouteKind::kRuns, bind(list_runs)},
      {RouteKind::kPipeline, bind(show_pipeline)},
      {RouteKind::kQuarantineList, bind(list_quarantine)},
      {RouteKind::kQuarantineEntry, bind(show_quarantine_entry)},
      {RouteKind::kRelease, bind(release_quarantine_entry)},
      {RouteKind::kOutboxList, bind(list_outbox)},
      {RouteKind::kOutboxRetry, bind(retry_outbox_event)},
      {RouteKind::kViews, bind(list_views)},
      {RouteKind::kAccountView, bind(account_view)},
  };
}

}  // namespace

Api::Api(const app::config::Config& config, RunQueue& runs, pipeline::db::Database& pool, metrics::Metrics& metrics,
         PipelineMetrics& pipeline_metrics, ApiOptions options)
    : options_(std::move(options)),
      context_{config, runs, pool, metrics, pipeline_metrics, options_},
      router_(route_table(context_), options_.api_token, options_.host_names) {
  add_webhook_series(metrics);
}

void Api::on_timeout(const HttpRequest& request) {
  if (request.method == "POST" && route_of(request.target).kind == RouteKind::kTrigger) {
    count_webhook(context_.metrics, "timeout");
    // No answer goes back (the connection is closed), so the log is where the reason shows;
    // a flood of them is one line an interval, with the count (the metric counts each).
    if (const auto summary = stalled_triggers_.admit()) {
      spdlog::warn("run trigger rejected: timeout: the client stalled after its header or sent its body too slowly, "
                   "the connection is closed{}",
                   *summary);
    }
  }
}

}  // namespace tidemark::app::serve
