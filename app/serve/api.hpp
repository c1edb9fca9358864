#pragma once
// The routes of docs/api.md: signed run triggers, run and pipeline status, the
// quarantine, the outbox's events and retries, the views, metrics and health. handle() is blocking (database): call it on a worker
// thread, never on the thread that runs the sockets — except for GET /healthz, which
// touches nothing and must answer even when every worker is busy. The handlers are in
// handlers_*.cpp, by area; the shared answers (404, 405, 401, …) in router.cpp.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/store/pg/database.hpp"
#include "app/serve/handlers.hpp"
#include "app/serve/http_message.hpp"
#include "pipeline/core/log_throttle.hpp"
#include "app/serve/pipeline_metrics.hpp"
#include "app/serve/router.hpp"
#include "app/serve/run_queue.hpp"
#include "metrics/metrics.hpp"
#include "app/config/config.hpp"

namespace tidemark::app::serve {

// Larger request bodies get 413 before any signature work.
inline constexpr std::size_t kMaxBodyBytes = 64 * 1024;
// GET /v1/quarantine: each raw record is cut to this many bytes (raw_truncated: true; the
// whole one is at GET /v1/quarantine/{id}), and a page stops once it holds about this many
// bytes (at least one entry), with a `next` link to the rest.
inline constexpr std::size_t kListRawBytes = 4 * 1024;
inline constexpr std::size_t kListPageBytes = 1024 * 1024;

struct ApiOptions {
  // The key bytes of TIDEMARK_WEBHOOK_SECRET; without one every run trigger gets 401.
  std::optional<std::string> webhook_key;
  // TIDEMARK_API_TOKEN: when set, the /v1 read and release endpoints need "Bearer <token>".
  std::optional<std::string> api_token;
  // Without a token, the hosts a /v1 request's Host may name (front_door.hpp host_name's
  // form): the listen address, localhost and http.allowed_hosts. Set by the Service.
  std::vector<std::string> host_names;
  // Why serve is not ready apart from the database (the relay down, say); "" when it is.
  std::function<std::string()> not_ready;
};

// The API: the route table (route -> handler, in api.cpp) behind the router.
class Api {
 public:
  Api(const app::config::Config& config, RunQueue& runs, pipeline::db::Database& pool, metrics::Metrics& metrics,
      PipelineMetrics& pipeline_metrics, ApiOptions options);
  Api(const Api&) = delete;  // the route table holds a reference to context_
  Api& operator=(const Api&) = delete;

  HttpResponse handle(const HttpRequest& request) const { return router_.dispatch(request); }
  // A client stopped sending a request's body before the timeout or sent it too slowly
  // (counted and logged for run triggers). On the io_context's thread.
  void on_timeout(const HttpRequest& request);

 private:
  ApiOptions options_;
  pipeline::LogThrottle stalled_triggers_{std::chrono::seconds(10)};
  ApiContext context_;
  Router router_;
};

}  // namespace tidemark::app::serve
