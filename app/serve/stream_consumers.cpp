#include "app/serve/stream_consumers.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "app/wiring/run_request.hpp"
#include "connectors/nats/connection.hpp"
#include "connectors/nats/nats_source.hpp"
#include "pipeline/core/backoff.hpp"
#include "pipeline/run/partition_worker.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::app::serve {

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

StreamConsumers::StreamConsumers(const pipeline::Config& config, pipeline::db::Database& database, PipelineMetrics& metrics)
    : config_(config), database_(database), metrics_(metrics) {}

StreamConsumers::~StreamConsumers() {
  request_stop();
  for (std::thread& thread : threads_) thread.join();
}

void StreamConsumers::start() {
  for (const auto& [name, pipeline] : config_.pipelines) {
    if (!pipeline.source.capabilities().partitioned) continue;
    threads_.emplace_back([this, &pipeline = pipeline] { consume(pipeline); });
    spdlog::info("pipeline {}: consumed continuously ({} partitions of stream {})", name,
                 pipeline.source.partition_count(),
                 std::get<connectors::nats::NatsSourceOptions>(pipeline.source.options).stream);
  }
}

void StreamConsumers::request_stop() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
}

bool StreamConsumers::wait(std::chrono::milliseconds delay) {
  std::unique_lock lock(mutex_);
  return !wake_.wait_for(lock, delay, [this] { return stopping_.load(); });
}

void StreamConsumers::consume(const pipeline::PipelineConfig& pipeline) {
  const std::string& name = pipeline.name;
  // The consumer watches the partitions' streams for news: nats is the one partitioned kind.
  const auto& nats = std::get<connectors::nats::NatsSourceOptions>(pipeline.source.options);
  const pipeline::LeaseSettings settings{nats.owner_timeout, nats.rebalance_interval};
  std::vector<pipeline::RunRequest> requests = partition_requests(pipeline, config_.entity(pipeline.entity));
  for (pipeline::RunRequest& request : requests) {
    request.database = &database_;
    request.trigger = to_string(pipeline::Trigger::kStream);
    request.stop_requested = &stopping_;
    request.on_batch = [this, &name](const pipeline::BatchReport& report) { metrics_.run_batch(name, report); };
  }
  std::vector<Backoff> partition_backoff(requests.size(), Backoff(settings.rebalance_interval));
  Backoff consumer_backoff(settings.rebalance_interval);
  while (!stopping_) {
    try {
      // The worker's heartbeat runs on its own thread from here until the worker ends, which
      // frees its partitions for the other workers at once.
      pipeline::PartitionWorker worker(database_, name, nats.partitions, settings);
      connectors::nats::Connection streams(nats.servers);
      const auto checkpoints = database_.connect();
      std::vector<pipeline::PartitionLease> owned;
      Clock::time_point next_balance{};
      while (!stopping_) {
        if (Clock::now() >= next_balance) {
          owned = worker.balance();
          metrics_.partitions_owned(name, owned.size());
          consumer_backoff.succeeded();
          next_balance = Clock::now() + settings.rebalance_interval;
        }
        for (const pipeline::PartitionLease& lease : owned) {
          if (stopping_) break;
          Backoff& backoff = partition_backoff[static_cast<std::size_t>(lease.partition)];
          pipeline::RunRequest& request = requests[static_cast<std::size_t>(lease.partition)];
          const std::string stream = connectors::nats::partition_stream(nats, lease.partition);
          if (backoff.waiting() ||
              !connectors::nats::partition_has_work(streams, nats, lease.partition,
                                                    pipeline::stored_checkpoint(*checkpoints, name, stream).value_or(pipeline::Position{}).text)) {
            continue;
          }
          request.partition = pipeline::PartitionOwnership{&worker.leases(), lease};
          try {
            const pipeline::RunSummary summary = pipeline::run_pipeline(request);
            metrics_.run_ended(name, pipeline::Trigger::kStream, summary.stopped_early ? "stopped" : "succeeded");
            backoff.succeeded();
          } catch (const pipeline::LeaseLost& lost) {
            // Another worker took the partition: balance again before anything else.
            metrics_.run_ended(name, pipeline::Trigger::kStream, "failed");
            spdlog::info("pipeline {}: {}; balancing again", name, lost.what());
            next_balance = Clock::now();
            break;
          } catch (const std::exception& error) {
            metrics_.run_ended(name, pipeline::Trigger::kStream, "failed");
            if (dynamic_cast<const connectors::nats::PartitionRefused*>(&error) != nullptr) {
              metrics_.partition_refused(name, lease.partition);
            }
            const auto delay = backoff.failed();
            spdlog::error("pipeline {}: partition {}: run failed: {}; trying again in {}", name, stream, error.what(),
                          pipeline::format_duration(delay));
          }
          // After a long drain, balance before the next partition: a worker that joined
          // meanwhile gets its share now, not after every partition this one owns.
          if (Clock::now() >= next_balance) break;
        }
        if (Clock::now() < next_balance && !wait(kPollInterval)) break;
      }
    } catch (const std::exception& error) {
      // The database or the NATS servers could not be reached: the worker ended (its
      // partitions freed where the database allowed) and starts again after the backoff.
      metrics_.partitions_owned(name, 0);
      const auto delay = consumer_backoff.failed();
      spdlog::error("pipeline {}: consumer failed: {}; starting again in {}", name, error.what(),
                    pipeline::format_duration(delay));
      if (!wait(delay)) break;
    }
  }
  metrics_.partitions_owned(name, 0);
}

}  // namespace tidemark::app::serve
