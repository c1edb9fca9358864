#include "app/serve/service.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/system_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include "pipeline/store/pg/database.hpp"
#include "app/retention/retention.hpp"
#include "app/serve/http_server.hpp"
#include "app/serve/pipeline_metrics.hpp"
#include "app/serve/run_queue.hpp"
#include "app/serve/schedule.hpp"
#include "app/serve/stream_consumers.hpp"
#include "pipeline/relay/relay.hpp"
#include "pipeline/core/backoff.hpp"
#include "pipeline/core/error_text.hpp"
#include "pipeline/core/validate.hpp"
#include "app/wiring/options.hpp"
#include "app/wiring/sinks.hpp"
#include "pipeline/views/views.hpp"

namespace tidemark::app::serve {

namespace asio = boost::asio;

namespace {

// The relay's restart backoff: doubling from the first delay to the last; a run that lasted
// kHealthyRun before failing starts the doubling again.
constexpr std::chrono::milliseconds kFirstRestartDelay = std::chrono::seconds(1);
constexpr std::chrono::milliseconds kMaxRestartDelay = std::chrono::seconds(30);
constexpr auto kHealthyRun = std::chrono::minutes(1);

std::vector<std::pair<std::string, Schedule>> schedules_of(const app::config::Config& config) {
  std::vector<std::pair<std::string, Schedule>> schedules;
  for (const auto& [name, pipeline] : config.pipelines) {
    if (pipeline.schedule) schedules.emplace_back(name, Schedule(name, *pipeline.schedule));
  }
  return schedules;
}

// A tick as the logs and a run's reason name it: UTC, with its Z.
std::string utc_text(TimePoint time) {
  return pipeline::format_timestamp(
      std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch()).count());
}

// A scheduled tick whose run could not be recorded (the database did not answer) is kept in
// memory, at most one per pipeline, and recorded again with backoff; once the database answers
// it is recorded and runs once, whatever number of ticks fell in the outage. Not kept across
// a stop: serve stopping during the outage loses it (docs/operations.md).
struct MissedTick {
  MissedTick(std::string name, asio::io_context& io) : pipeline(std::move(name)), retry(io) {}
  const std::string pipeline;
  std::mutex mutex;
  bool recording = false;        // guarded by mutex: a tick's run is being recorded
  std::optional<TimePoint> at;   // guarded by mutex: the tick kept, while one is
  pipeline::DoublingDelay delay{kFirstRestartDelay, kMaxRestartDelay};  // guarded by mutex
  asio::system_timer retry;      // io thread only
};

}  // namespace

struct Service::Impl {
  explicit Impl(ServeOptions serve_options)
      : options(std::move(serve_options)),
        schedules(schedules_of(options.config)),
        sinks(options.run_relay ? make_sinks(options.config, options.database_url, &metrics) : pipeline::Sinks{}),
        pool(options.database_url),
        pipeline_metrics(options.config, pool, metrics),
        runs(options.config, pool, pipeline_metrics, io),
        streams(options.config, pool, pipeline_metrics, io),
        api(options.config, runs, pool, metrics, pipeline_metrics, api_options()),
        workers(options.worker_threads),
        server(io, workers, options.listen,
               HttpHandlers{[this](const HttpRequest& request) { return api.handle(request); },
                            [this](const HttpRequest& request) { api.on_timeout(request); }},
               HttpServerLimits{options.request_timeout, options.config.http.max_connections}),
        relay_restart(io) {
    if (!sinks.empty()) {
      relay = std::make_unique<pipeline::relay::Relay>(options.database_url, std::move(sinks),
                                                       relay_options(options.config), &metrics);
      metrics.component_restarts_total.Add({{"component", "relay"}});
    }
  }

  ApiOptions api_options() {
    ApiOptions api_options = options.api;
    api_options.host_names = listen_host_names(options.listen);
    api_options.host_names.push_back("localhost");
    for (const auto& name : options.config.http.allowed_hosts) api_options.host_names.push_back(host_name(name));
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

  // The relay's loop is a coroutine on `io` (its libpqxx work on a thread of its own); how it
  // ended comes back to `io`, which supervises it: any error restarts it after a backoff
  // timer, counted in tidemark_component_restarts_total{component="relay"}, so it never ends
  // silently. While the loop runs, io.run() goes on.
  void start_relay() {
    const auto started = std::chrono::steady_clock::now();
    relay->start(io, [this, started](std::exception_ptr error) {
      std::string failure;
      if (error) {
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& exception) {
          failure = exception.what();
        } catch (...) {
          // not a std::exception: no text of its own
        }
        if (failure.empty()) failure = "unknown error";
      }
      relay_ended(started, failure);
    });
  }

  void relay_ended(std::chrono::steady_clock::time_point started, const std::string& failure) {
    if (failure.empty()) return;  // stopped
    if (std::chrono::steady_clock::now() - started >= kHealthyRun) relay_restart_delay.succeeded();
    const std::chrono::milliseconds relay_delay = relay_restart_delay.failed();
    spdlog::error("the outbox relay failed: {}; restarting it in {}", failure, pipeline::format_duration(relay_delay));
    {
      std::lock_guard lock(relay_mutex);
      relay_failure = pipeline::bounded_error_text(failure);
    }
    if (stopping) return;
    relay_restart.expires_after(relay_delay);
    relay_restart.async_wait([this](const boost::system::error_code& error) {
      if (error || stopping) return;  // cancelled by the stop
      {
        std::lock_guard lock(relay_mutex);
        relay_failure.clear();
      }
      metrics.component_restarts_total.Add({{"component", "relay"}}).Increment();
      spdlog::info("the outbox relay restarts");
      start_relay();
    });
  }

  asio::awaitable<void> schedule_loop(std::string pipeline, const Schedule& schedule, asio::system_timer& timer,
                                      MissedTick& missed) {
    TimePoint tick = schedule.first(std::chrono::system_clock::now());
    // `stopping` is looked at before every wait: a stop that came before the wait began
    // had no wait to cancel.
    while (!stopping) {
      runs.scheduled(pipeline, tick);
      timer.expires_at(tick);
      boost::system::error_code error;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, error));
      if (stopping) co_return;
      asio::post(workers, [this, tick, &missed] { record_tick(tick, missed, Tick::kOnTime); });
      const auto next = schedule.next(tick, std::chrono::system_clock::now());
      if (!next) co_return;
      tick = *next;
    }
  }

  // Which tick record_tick records: one on time, or the pipeline's one missed tick, kept
  // since the database did not answer for it.
  enum class Tick : unsigned char { kOnTime, kMissed };

  // On a worker: records the run of the scheduled tick at `tick`. When the database does not
  // answer, the tick is kept (the pipeline's one missed tick) and recorded again after a
  // backoff (retry_missed) until it is; a tick on time that comes while another is being
  // recorded or is kept joins it, as ticks that come while a run is in progress coalesce.
  // The missed tick's run has a reason that names it, which is how `tidemark status` and
  // GET /v1/runs tell it from the ticks on time.
  void record_tick(TimePoint tick, MissedTick& missed, Tick which) {
    const bool on_time = which == Tick::kOnTime;
    {
      std::lock_guard lock(missed.mutex);
      if (on_time && (missed.recording || missed.at)) {
        spdlog::debug("pipeline {}: the tick at {} joins the one {}", missed.pipeline, utc_text(tick),
                      missed.at ? "missed at " + utc_text(*missed.at) : std::string("being recorded"));
        return;
      }
      missed.recording = true;
    }
    std::optional<std::string> reason;
    if (!on_time) reason = "scheduled tick at " + utc_text(tick) + " missed: the database did not answer then";
    std::optional<TriggerResult> result;
    std::string failure;
    try {
      result = runs.trigger(TriggerRequest{missed.pipeline, app::config::Trigger::kSchedule, false, reason, std::nullopt});
    } catch (const std::exception& error) {
      failure = error.what();
    }
    std::lock_guard lock(missed.mutex);
    missed.recording = false;
    if (!failure.empty()) {
      missed.at = tick;  // kept (again)
      if (on_time) {
        spdlog::warn("pipeline {}: the run of the tick at {} is not recorded yet: {}; it is recorded and runs once "
                     "the database answers",
                     missed.pipeline, utc_text(tick), failure);
      } else {
        // The database retries logged the outage already (one line a minute).
        spdlog::debug("pipeline {}: the tick missed at {} is not recorded yet: {}", missed.pipeline, utc_text(tick),
                      failure);
      }
      asio::post(io, [this, &missed] { retry_missed(missed); });
    } else if (!on_time && result) {  // no result: stopping, and the missed tick stays kept
      missed.at.reset();
      missed.delay.succeeded();
      spdlog::info("pipeline {}: the tick missed at {} is recorded as run {}", missed.pipeline, utc_text(tick),
                   result->run_id);
    }
  }

  // On the io thread: records the missed tick again after the next backoff delay.
  void retry_missed(MissedTick& missed) {
    if (stopping) return;
    std::chrono::milliseconds delay;
    TimePoint at;
    {
      std::lock_guard lock(missed.mutex);
      delay = missed.delay.failed();
      at = *missed.at;  // kept until it is recorded: no tick on time records meanwhile
    }
    missed.retry.expires_after(delay);
    missed.retry.async_wait([this, at, &missed](const boost::system::error_code& error) {
      if (error || stopping) return;  // the stop: the tick is lost (begin_stop says so)
      asio::post(workers, [this, at, &missed] { record_tick(at, missed, Tick::kMissed); });
    });
  }

  // A housekeeping job: after `first`, then every `interval` until the stop, `job` runs on a
  // worker (it blocks on the database); it logs its own errors.
  asio::awaitable<void> periodic(std::chrono::seconds first, std::chrono::seconds interval, asio::system_timer& timer,
                                 std::function<void()> job) {
    timer.expires_after(first);
    while (!stopping) {  // as in schedule_loop
      boost::system::error_code error;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, error));
      if (stopping) co_return;
      asio::post(workers, job);
      timer.expires_after(interval);
    }
  }

  // The one retention job (docs/retention.md): at start-up, then hourly, every kind is
  // deleted past its window in bounded chunks, each chunk counted in
  // tidemark_retention_deleted_total{kind}; whatever was kept past its window, and why, is logged.
  void start_housekeeping() {
    // Every kind's series from start-up, at 0: increase() sees the first deletion as a change.
    for (const auto kind : retention::kKinds) metrics.retention_deleted_total.Add({{"kind", std::string(kind)}});
    timers.emplace_back(io);
    asio::co_spawn(io, periodic(std::chrono::seconds(0), std::chrono::hours(1), timers.back(), [this] {
      run_retention_job();
    }), asio::detached);
  }

  void run_retention_job() {
    // A pass longer than the hour: the next tick finds it still running and leaves it be.
    if (retention_running.exchange(true)) {
      spdlog::info("retention: the previous pass is still running; this hour's is skipped");
      return;
    }
    retention::Options retention_options;
    retention_options.windows = options.config.retention;
    retention_options.redelivery = redelivery(options.config.relay);
    retention_options.on_chunk = [this](std::string_view kind, std::int64_t deleted) {
      metrics.retention_deleted_total.Add({{"kind", std::string(kind)}}).Increment(static_cast<double>(deleted));
    };
    try {
      pool.with_connection("applying retention", [&](pqxx::connection& connection) {
        for (const auto& result : retention::run_retention(connection, retention_options)) {
          for (const auto& reason : result.kept) spdlog::warn("retention: {}", reason);
          if (result.deleted > 0) spdlog::info("retention: {} {} row(s) deleted", result.deleted, result.kind);
        }
      });
    } catch (const std::exception& failure) {
      spdlog::error("retention: {}", failure.what());
    }
    retention_running = false;
  }

  // The one way serve stops: everything that waits on the io_context is cancelled (the
  // acceptor and idle connections closed, the timers cancelled), the runs see
  // RunRequest::stop_requested, the relay is told to stop; io_context::run() returns once
  // the last of them has ended.
  void begin_stop() {
    if (stopping) return;
    stopping = true;
    server.stop();
    for (auto& timer : timers) timer.cancel();
    for (auto& missed : missed_ticks) {
      missed.retry.cancel();
      std::lock_guard lock(missed.mutex);
      if (missed.at) {
        spdlog::warn("pipeline {}: serve stops before the database answered: the tick missed at {} does not run "
                     "(the schedule's next tick after a start runs as usual)",
                     missed.pipeline, utc_text(*missed.at));
      }
    }
    relay_restart.cancel();
    runs.request_stop();
    streams.request_stop();
    if (relay) relay->stop();  // cancels the loop's waits; it records the answers in flight and ends
    asio::co_spawn(io, finish_stop(), asio::detached);
  }

  // Once the runs have ended, gives the connections with a request in hand the time to
  // answer; then whatever else waits on the io_context (the CLI's signals) stops waiting.
  asio::awaitable<void> finish_stop() {
    const bool runs_stopped = co_await runs.wait_idle(options.shutdown_timeout);
    if (!runs_stopped) {
      spdlog::error("runs did not stop within {}; exiting (the batch in hand rolls back)",
                    pipeline::format_duration(options.shutdown_timeout));
      spdlog::default_logger()->flush();
      std::_Exit(1);
    }
    co_await server.drain(options.request_timeout);
    if (on_stopped) on_stopped();
  }

  ServeOptions options;
  std::vector<std::pair<std::string, Schedule>> schedules;
  metrics::Metrics metrics;  // before the sinks, which count into it
  pipeline::Sinks sinks;
  asio::io_context io{1};
  pipeline::db::Database pool;
  PipelineMetrics pipeline_metrics;
  std::atomic<bool> retention_running{false};  // a retention pass is under way on a worker
  RunQueue runs;
  StreamConsumers streams;  // its consumers end with io.run(), its threads before the metrics and the pool go
  Api api;
  asio::thread_pool workers;
  HttpServer server;
  std::list<asio::system_timer> timers;
  std::list<MissedTick> missed_ticks;  // one per schedule
  std::unique_ptr<pipeline::relay::Relay> relay;  // its loop runs on `io`
  asio::steady_timer relay_restart;   // io thread only
  pipeline::DoublingDelay relay_restart_delay{kFirstRestartDelay, kMaxRestartDelay};  // io thread only
  std::mutex relay_mutex;
  std::string relay_failure;  // guarded by relay_mutex: what the relay is restarting after
  bool stopping = false;      // io thread only
  std::function<void()> on_stopped;
};

Service::Service(ServeOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Service::~Service() = default;

unsigned short Service::port() const { return impl_->server.port(); }

metrics::Metrics& Service::metrics() { return impl_->metrics; }

void Service::request_stop() {
  asio::post(impl_->io, [impl = impl_.get()] { impl->begin_stop(); });
}

boost::asio::io_context& Service::io_context() { return impl_->io; }

int Service::run(std::function<void()> on_stopped) {
  Impl& self = *impl_;
  self.on_stopped = std::move(on_stopped);
  self.server.start();
  spdlog::info("tidemark serve: listening on http://{}", self.server.address());
  for (const auto& [name, schedule] : self.schedules) {
    self.timers.emplace_back(self.io);
    self.missed_ticks.emplace_back(name, self.io);
    asio::co_spawn(self.io, self.schedule_loop(name, schedule, self.timers.back(), self.missed_ticks.back()),
                   asio::detached);
    spdlog::info("pipeline {}: runs {}", name, schedule.describe());
  }
  self.start_housekeeping();
  self.streams.start();
  if (self.relay) self.start_relay();
  self.io.run();
  self.workers.join();
  spdlog::info("tidemark serve: stopped");
  return 0;
}

}  // namespace tidemark::app::serve
