#include "app/serve/service.hpp"

#include "app/wiring/options.hpp"
#include "app/wiring/sinks.hpp"

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <list>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/system_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include "pipeline/store/pg/connection_pool.hpp"
#include "app/serve/http_server.hpp"
#include "app/serve/run_queue.hpp"
#include "app/serve/schedule.hpp"
#include "pipeline/relay/relay.hpp"
#include "pipeline/views/views.hpp"

namespace tidemark::app::serve {

namespace asio = boost::asio;

namespace {

// The relay's restart backoff: doubling from the first delay to the last; a run that lasted
// kHealthyRun before failing starts the doubling again.
constexpr std::chrono::milliseconds kFirstRestartDelay = std::chrono::seconds(1);
constexpr std::chrono::milliseconds kMaxRestartDelay = std::chrono::seconds(30);
constexpr auto kHealthyRun = std::chrono::minutes(1);

std::vector<std::pair<std::string, Schedule>> schedules_of(const pipeline::Config& config) {
  std::vector<std::pair<std::string, Schedule>> schedules;
  for (const auto& [name, pipeline] : config.pipelines) {
    if (pipeline.schedule) schedules.emplace_back(name, Schedule(name, *pipeline.schedule));
  }
  return schedules;
}

}  // namespace

struct Service::Impl {
  explicit Impl(ServeOptions serve_options)
      : options(std::move(serve_options)),
        schedules(schedules_of(options.config)),
        sinks(options.run_relay ? make_sinks(options.config, options.database_url) : pipeline::relay::Sinks{}),
        pool(options.database_url),
        runs(options.config, pool, metrics),
        api(options.config, runs, pool, metrics, api_options()),
        workers(options.worker_threads),
        server(io, workers, options.listen,
               HttpHandlers{[this](const HttpRequest& request) { return api.handle(request); },
                            [this](const HttpRequest& request) { api.on_timeout(request); }},
               HttpServerLimits{options.request_timeout, options.config.http.max_connections}),
        signals(io) {
    if (!sinks.empty()) {
      relay = std::make_unique<pipeline::relay::Relay>(options.database_url, std::move(sinks),
                                                       relay_options(options.config.relay), &metrics);
      metrics.component_restarts_total.Add({{"component", "relay"}});
    }
    if (options.handle_signals) {
      signals.add(SIGTERM);
      signals.add(SIGINT);
    }
  }

  ApiOptions api_options() {
    ApiOptions api_options = options.api;
    api_options.not_ready = [this] { return relay_problem(); };
    return api_options;
  }

  // For /readyz: "" while the relay (if any) delivers, else why it does not.
  std::string relay_problem() {
    if (!relay) return "";
    {
      std::lock_guard lock(relay_mutex);
      if (!relay_failure.empty()) return "the outbox relay is restarting after an error: " + relay_failure;
    }
    if (relay->waiting_for_database()) return "the outbox relay is waiting for the database";
    return "";
  }

  // The relay thread. Relay::run() returns only after stop() and waits database outages out
  // itself; any other error restarts it after a backoff, counted in
  // tidemark_component_restarts_total{component="relay"}, so it never ends silently.
  void supervise_relay() {
    auto delay = kFirstRestartDelay;
    for (;;) {
      const auto started = std::chrono::steady_clock::now();
      try {
        relay->run();
        return;
      } catch (const std::exception& error) {
        if (std::chrono::steady_clock::now() - started >= kHealthyRun) delay = kFirstRestartDelay;
        spdlog::error("the outbox relay failed: {}; restarting it in {} ms", error.what(), delay.count());
        std::unique_lock lock(relay_mutex);
        relay_failure = pipeline::relay::bounded_error_text(error.what());
        if (relay_wake.wait_for(lock, delay, [this] { return relay_stopping; })) return;
        relay_failure.clear();
      }
      metrics.component_restarts_total.Add({{"component", "relay"}}).Increment();
      spdlog::info("the outbox relay restarts");
      delay = std::min(delay * 2, kMaxRestartDelay);
    }
  }

  void stop_relay() {
    if (!relay) return;
    relay->stop();
    {
      std::lock_guard lock(relay_mutex);
      relay_stopping = true;
    }
    relay_wake.notify_all();
  }

  void wait_for_signal() {
    signals.async_wait([this](const boost::system::error_code& error, int signal) {
      if (error) return;
      if (!stopping) {
        spdlog::info("signal {}: stopping (the batches in hand commit first; a second signal exits at once)", signal);
        begin_stop();
        wait_for_signal();
        return;
      }
      // Still safe: a batch commits in one transaction, which PostgreSQL rolls back when
      // the connection goes; the checkpoint never moves without its batch.
      spdlog::warn("signal {} again: exiting now", signal);
      spdlog::default_logger()->flush();
      std::_Exit(128 + signal);
    });
  }

  asio::awaitable<void> schedule_loop(std::string pipeline, const Schedule& schedule, asio::system_timer& timer) {
    TimePoint tick = schedule.first(std::chrono::system_clock::now());
    for (;;) {
      timer.expires_at(tick);
      boost::system::error_code error;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, error));
      if (stopping) co_return;
      asio::post(workers, [this, pipeline] {
        try {
          runs.trigger(TriggerRequest{pipeline, "schedule", false, std::nullopt, std::nullopt});
        } catch (const std::exception& failure) {
          spdlog::error("pipeline {}: scheduled run not recorded: {}", pipeline, failure.what());
        }
      });
      const auto next = schedule.next(tick, std::chrono::system_clock::now());
      if (!next) co_return;
      tick = *next;
    }
  }

  // DESIGN rule 16: inbox records outlive every redelivery, then go (hourly).
  asio::awaitable<void> inbox_cleanup_loop(asio::system_timer& timer) {
    for (;;) {
      timer.expires_after(std::chrono::hours(1));
      boost::system::error_code error;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, error));
      if (stopping) co_return;
      asio::post(workers, [this] {
        try {
          pool.with_connection("cleaning up the inbox", [&](pqxx::connection& connection) {
            const auto deleted = pipeline::views::cleanup_inbox(
                connection, pipeline::views::kDefaultInboxRetention, redelivery(options.config.relay));
            spdlog::info("inbox cleanup: {} records older than {}h deleted", deleted,
                         pipeline::views::kDefaultInboxRetention.count());
          });
        } catch (const std::exception& failure) {
          spdlog::error("inbox cleanup: {}", failure.what());
        }
      });
    }
  }

  void begin_stop() {
    if (stopping) return;
    stopping = true;
    server.stop();
    for (auto& timer : timers) timer.cancel();
    runs.request_stop();
    stop_relay();
    asio::post(workers, [this] {
      runs_stopped = runs.wait_idle(options.shutdown_timeout);
      runs_done = true;
    });
    asio::co_spawn(io, finish_stop(), asio::detached);
  }

  // Once the runs have ended, gives the connections with a request in hand the time to
  // answer, then ends io_context::run().
  asio::awaitable<void> finish_stop() {
    asio::steady_timer timer(io);
    while (!runs_done) {
      timer.expires_after(std::chrono::milliseconds(20));
      co_await timer.async_wait(asio::use_awaitable);
    }
    if (!runs_stopped) {
      spdlog::error("runs did not stop within {} ms; exiting (the batch in hand rolls back)",
                    options.shutdown_timeout.count());
      spdlog::default_logger()->flush();
      std::_Exit(1);
    }
    const auto deadline = std::chrono::steady_clock::now() + options.request_timeout;
    while (server.open_connections() > 0 && std::chrono::steady_clock::now() < deadline) {
      timer.expires_after(std::chrono::milliseconds(20));
      co_await timer.async_wait(asio::use_awaitable);
    }
    boost::system::error_code ignored;
    signals.cancel(ignored);
    io.stop();
  }

  ServeOptions options;
  std::vector<std::pair<std::string, Schedule>> schedules;
  pipeline::relay::Sinks sinks;
  metrics::Metrics metrics;
  ConnectionPool pool;
  RunQueue runs;
  Api api;
  asio::io_context io{1};
  asio::thread_pool workers;
  HttpServer server;
  asio::signal_set signals;
  std::list<asio::system_timer> timers;
  std::unique_ptr<pipeline::relay::Relay> relay;
  std::thread relay_thread;
  std::mutex relay_mutex;
  std::condition_variable relay_wake;
  std::string relay_failure;    // guarded by relay_mutex: what the relay is restarting after
  bool relay_stopping = false;  // guarded by relay_mutex
  bool stopping = false;  // io thread only
  std::atomic<bool> runs_done{false};
  std::atomic<bool> runs_stopped{false};
};

Service::Service(ServeOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Service::~Service() {
  if (impl_->relay_thread.joinable()) {
    impl_->stop_relay();
    impl_->relay_thread.join();
  }
}

unsigned short Service::port() const { return impl_->server.port(); }

metrics::Metrics& Service::metrics() { return impl_->metrics; }

void Service::request_stop() {
  asio::post(impl_->io, [impl = impl_.get()] { impl->begin_stop(); });
}

int Service::run() {
  Impl& self = *impl_;
  self.server.start();
  spdlog::info("tidemark serve: listening on http://{}", self.server.address());
  for (const auto& [name, schedule] : self.schedules) {
    self.timers.emplace_back(self.io);
    asio::co_spawn(self.io, self.schedule_loop(name, schedule, self.timers.back()), asio::detached);
    spdlog::info("pipeline {}: runs {}", name, schedule.describe());
  }
  if (!self.options.config.destination_names_of_kind(pipeline::DestinationKind::kView).empty()) {
    self.timers.emplace_back(self.io);
    asio::co_spawn(self.io, self.inbox_cleanup_loop(self.timers.back()), asio::detached);
  }
  if (self.options.handle_signals) self.wait_for_signal();
  if (self.relay) {
    self.relay_thread = std::thread([&self] { self.supervise_relay(); });
  }
  self.io.run();
  self.workers.join();
  if (self.relay_thread.joinable()) self.relay_thread.join();
  spdlog::info("tidemark serve: stopped");
  return 0;
}

}  // namespace tidemark::app::serve
