#pragma once
// serve's consumption of partitioned pipelines (source kind nats; docs/scale-out.md "serve"):
// one worker per such pipeline, on a thread of its own, for as long as serve runs. Every
// rebalance interval it balances its leases (it takes its fair share and gives up its surplus
// as workers on other hosts join and leave); every poll it starts a run (trigger `stream`) of
// each partition it owns whose stream holds messages past the checkpoint. A run drains its
// partition up to the stream's last sequence at the run's start, so an idle partition
// records no runs and a busy one a run per poll at most. A partition whose run failed (a
// refused stream, an unreachable server) is tried again after a backoff that doubles up to
// kMaxRetryDelay; serve's schedule and webhooks do not start runs of these pipelines.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "app/config/config.hpp"
#include "app/serve/pipeline_metrics.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::app::serve {

class StreamConsumers {
 public:
  StreamConsumers(const pipeline::Config& config, pipeline::db::Database& database, PipelineMetrics& metrics);
  // Stops (request_stop) and waits for the runs in hand to end.
  ~StreamConsumers();
  StreamConsumers(const StreamConsumers&) = delete;
  StreamConsumers& operator=(const StreamConsumers&) = delete;

  // Starts a consumer for each nats pipeline of the config.
  void start();
  // The runs in hand commit their batch and end; the workers free their partitions.
  void request_stop();

 private:
  void consume(const pipeline::PipelineConfig& pipeline);
  // Waits up to `delay`; false once stopping.
  bool wait(std::chrono::milliseconds delay);

  const pipeline::Config& config_;
  pipeline::db::Database& database_;
  PipelineMetrics& metrics_;
  std::atomic<bool> stopping_{false};  // also the runs' RunRequest::stop_requested
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::thread> threads_;
};

}  // namespace tidemark::app::serve
