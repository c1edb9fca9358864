#include "app/serve/stream_consumers.hpp"

#include <algorithm>
#include <functional>
#include <optional>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include "app/wiring/registry.hpp"
#include "app/wiring/run_request.hpp"
#include "pipeline/async/offload.hpp"
#include "pipeline/core/backoff.hpp"
#include "pipeline/run/partition_worker.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::app::serve {

namespace asio = boost::asio;

namespace {

using Clock = std::chrono::steady_clock;

// How often an owned partition's stream is asked for new messages: the most a message waits
// in an idle stream before its run starts.
constexpr std::chrono::milliseconds kPollInterval = std::chrono::seconds(1);
// A failed partition (or consumer) is tried again after a delay that doubles from the
// rebalance interval up to this.
constexpr std::chrono::milliseconds kMaxRetryDelay = std::chrono::minutes(5);

// When a failing thing may be tried again, the delay doubling with each failure in a row.
struct Backoff {
  explicit Backoff(std::chrono::milliseconds first) : delay(first, kMaxRetryDelay) {}

  pipeline::DoublingDelay delay;
  Clock::time_point until{};

  bool waiting() const { return Clock::now() < until; }
  std::chrono::milliseconds failed() {
    const auto wait = delay.failed();
    until = Clock::now() + wait;
    return wait;
  }
  void succeeded() { delay.succeeded(); }
};

}  // namespace

// One partitioned pipeline's consumer. Its coroutine runs on serve's io_context; its rounds
// (connect, poll, disconnect) run on the consumers' threads one at a time, co_awaited, so
// the state below is never touched from two threads at once.
struct StreamConsumers::Consumer {
  Consumer(StreamConsumers& consumers, const app::config::PipelineConfig& consumed)
      : consumers(consumers),
        consumed(consumed),
        settings{consumed.source.owner_timeout(), consumed.source.rebalance_interval()},
        requests(partition_requests(consumed, consumers.config_.entity(consumed.entity))),
        partition_backoff(requests.size(), Backoff(settings.rebalance_interval)),
        consumer_backoff(settings.rebalance_interval),
        timer(consumers.io_) {
    for (pipeline::RunRequest& request : requests) {
      request.database = &consumers.database_;
      request.trigger = to_string(app::config::Trigger::kStream);
      request.stop_requested = &consumers.stopping_;
      request.on_batch = [this](const pipeline::BatchReport& report) {
        this->consumers.metrics_.run_batch(this->consumed.name, report);
      };
    }
  }

  static asio::awaitable<void> consume(Consumer* consumer);
  // Waits `delay` on the timer, or until the stop cancels it.
  asio::awaitable<void> wait(std::chrono::milliseconds delay);
  // Blocking, on a consumer thread: the worker (its heartbeat from here until it ends), the
  // watcher of the partitions and the connection to the checkpoints.
  void connect();
  // Blocking, on a consumer thread: balances when due, then runs each owned partition that
  // holds news.
  void poll();
  // A run of the partition `name` failed: it is tried again after its backoff.
  void run_failed(const std::string& name, Backoff& backoff, const std::exception& error);
  // Blocking, on a consumer thread: the worker ends, which frees its partitions for the
  // other workers at once.
  void disconnect();

  StreamConsumers& consumers;
  const app::config::PipelineConfig& consumed;
  const pipeline::LeaseSettings settings;
  std::vector<pipeline::RunRequest> requests;
  std::vector<Backoff> partition_backoff;
  Backoff consumer_backoff;
  asio::steady_timer timer;  // on the io_context: the poll's and the backoff's waits
  // While connected.
  std::optional<pipeline::PartitionWorker> worker;
  std::unique_ptr<pipeline::PartitionWatcher> watcher;
  std::unique_ptr<pqxx::connection> checkpoints;
  std::vector<pipeline::PartitionLease> owned;
  Clock::time_point next_balance{};
};

asio::awaitable<void> StreamConsumers::Consumer::consume(Consumer* consumer) {
  StreamConsumers& self = consumer->consumers;
  const std::string& name = consumer->consumed.name;
  const std::function<void()> connecting = [consumer] { consumer->connect(); };
  const std::function<void()> polling = [consumer] { consumer->poll(); };
  const std::function<void()> disconnecting = [consumer] { consumer->disconnect(); };
  while (!self.stopping_) {
    std::optional<std::chrono::milliseconds> retry;
    try {
      co_await pipeline::async::offload(self.threads_.get(), &connecting);
      while (!self.stopping_) {
        co_await pipeline::async::offload(self.threads_.get(), &polling);
        // A balance that is due goes before the wait.
        if (Clock::now() < consumer->next_balance && !self.stopping_) co_await consumer->wait(kPollInterval);
      }
    } catch (const std::exception& error) {
      // The database or the NATS servers could not be reached: the worker ends (its
      // partitions freed where the database allowed) and starts again after the backoff.
      self.metrics_.partitions_owned(name, 0);
      retry = consumer->consumer_backoff.failed();
      spdlog::error("pipeline {}: consumer failed: {}; starting again in {}", name, error.what(),
                    pipeline::format_duration(*retry));
    }
    co_await pipeline::async::offload(self.threads_.get(), &disconnecting);
    if (retry && !self.stopping_) co_await consumer->wait(*retry);
  }
  self.metrics_.partitions_owned(name, 0);
}

asio::awaitable<void> StreamConsumers::Consumer::wait(std::chrono::milliseconds delay) {
  timer.expires_after(delay);
  boost::system::error_code cancelled;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, cancelled));
}

void StreamConsumers::Consumer::connect() {
  worker.emplace(consumers.database_, consumed.name, consumed.source.partition_count(), settings);
  watcher = watch_partitions(consumed.source);
  checkpoints = consumers.database_.connect();
  owned.clear();
  next_balance = {};
}

void StreamConsumers::Consumer::disconnect() {
  checkpoints.reset();
  watcher.reset();
  worker.reset();
}

void StreamConsumers::Consumer::run_failed(const std::string& name, Backoff& backoff, const std::exception& error) {
  consumers.metrics_.run_ended(consumed.name, app::config::Trigger::kStream, "failed");
  const auto delay = backoff.failed();
  spdlog::error("pipeline {}: partition {}: run failed: {}; trying again in {}", consumed.name, name, error.what(),
                pipeline::format_duration(delay));
}

void StreamConsumers::Consumer::poll() {
  const std::string& name = consumed.name;
  if (Clock::now() >= next_balance) {
    owned = worker->balance();
    consumers.metrics_.partitions_owned(name, owned.size());
    consumer_backoff.succeeded();
    next_balance = Clock::now() + settings.rebalance_interval;
  }
  for (const pipeline::PartitionLease& lease : owned) {
    if (consumers.stopping_) break;
    Backoff& backoff = partition_backoff[static_cast<std::size_t>(lease.partition)];
    pipeline::RunRequest& request = requests[static_cast<std::size_t>(lease.partition)];
    const std::string partition = consumed.source.partition_name(lease.partition);
    if (backoff.waiting() ||
        !watcher->has_work(lease.partition,
                           pipeline::stored_checkpoint(*checkpoints, name, partition).value_or(pipeline::Position{}).text)) {
      continue;
    }
    request.partition = pipeline::PartitionOwnership{&worker->leases(), lease};
    try {
      const pipeline::RunSummary summary = pipeline::run_pipeline(request);
      consumers.metrics_.run_ended(name, app::config::Trigger::kStream, summary.stopped_early ? "stopped" : "succeeded");
      backoff.succeeded();
    } catch (const pipeline::LeaseLost& lost) {
      // Another worker took the partition: balance again before anything else.
      consumers.metrics_.run_ended(name, app::config::Trigger::kStream, "failed");
      spdlog::info("pipeline {}: {}; balancing again", name, lost.what());
      next_balance = Clock::now();
      break;
    } catch (const pipeline::PartitionRefused& refused) {
      consumers.metrics_.partition_refused(name, lease.partition);
      run_failed(partition, backoff, refused);
    } catch (const std::exception& error) {
      run_failed(partition, backoff, error);
    }
    // After a long drain, balance before the next partition: a worker that joined
    // meanwhile gets its share now, not after every partition this one owns.
    if (Clock::now() >= next_balance) break;
  }
}

StreamConsumers::StreamConsumers(const app::config::Config& config, pipeline::db::Database& database,
                                 PipelineMetrics& metrics, asio::io_context& io)
    : config_(config), database_(database), metrics_(metrics), io_(io) {}

StreamConsumers::~StreamConsumers() {
  request_stop();
  // The consumers ended with serve's io.run(); what their threads still hold ends here.
  if (threads_) threads_->join();
}

void StreamConsumers::start() {
  for (const auto& [name, pipeline] : config_.pipelines) {
    if (!pipeline.source.capabilities().partitioned) continue;
    consumers_.emplace_back(*this, pipeline);
    const int partitions = pipeline.source.partition_count();
    spdlog::info("pipeline {}: consumed continuously ({} partitions, {} to {})", name, partitions,
                 pipeline.source.partition_name(0), pipeline.source.partition_name(partitions - 1));
  }
  if (consumers_.empty()) return;
  threads_ = std::make_unique<asio::thread_pool>(consumers_.size());
  for (Consumer& consumer : consumers_) asio::co_spawn(io_, Consumer::consume(&consumer), asio::detached);
}

void StreamConsumers::request_stop() {
  stopping_ = true;
  for (Consumer& consumer : consumers_) consumer.timer.cancel();
}

}  // namespace tidemark::app::serve
