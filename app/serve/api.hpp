#pragma once
// The routes of INTERFACE.md "HTTP API": signed run triggers, run and pipeline status, the
// quarantine, metrics and health. handle() is blocking (database): call it on a worker
// thread, never on the thread that runs the sockets — except for GET /healthz, which
// touches nothing and must answer even when every worker is busy.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "pipeline/store/pg/connection_pool.hpp"
#include "app/serve/http_message.hpp"
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
  // Why serve is not ready apart from the database (the relay down, say); "" when it is.
  std::function<std::string()> not_ready;
};

class Api {
 public:
  Api(const pipeline::Config& config, RunQueue& runs, ConnectionPool& pool, metrics::Metrics& metrics,
      ApiOptions options);

  HttpResponse handle(const HttpRequest& request);
  // A client stopped sending a request's body before the timeout (counted for run triggers).
  void on_timeout(const HttpRequest& request);

 private:
  HttpResponse trigger_run(const HttpRequest& request, const std::string& pipeline);
  HttpResponse run_status(const std::string& id);
  HttpResponse pipelines();
  HttpResponse quarantine(const HttpRequest& request);
  HttpResponse quarantine_entry(const std::string& id);
  HttpResponse release(const std::string& id);
  HttpResponse ready();
  // GET /v1/views/account_balance/accounts/{id}?min_sequence=S: 200 once applied, else 409.
  HttpResponse account_view(const HttpRequest& request, const std::string& view, const std::string& account);
  // Refreshes tidemark_view_lag_seconds for the config's views just before a scrape.
  void export_view_lag();
  bool authorized(const HttpRequest& request) const;
  HttpResponse reject_webhook(const std::string& result, int status, const std::string& message);
  void count_webhook(const std::string& result);

  const pipeline::Config& config_;
  RunQueue& runs_;
  ConnectionPool& pool_;
  metrics::Metrics& metrics_;
  ApiOptions options_;
};

}  // namespace tidemark::app::serve
