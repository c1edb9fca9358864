#pragma once
// serve's consumption of partitioned pipelines (source kind nats; docs/scale-out.md "serve"):
// one worker per such pipeline for as long as serve runs. Every rebalance interval it
// balances its leases (it takes its fair share and gives up its surplus as workers on other
// hosts join and leave); every poll it starts a run (trigger `stream`) of each partition it
// owns whose stream holds messages past the checkpoint. A run drains its partition up to the
// stream's last sequence at the run's start, so an idle partition records no runs and a busy
// one a run per poll at most. A partition whose run failed (a refused stream, an unreachable
// server) is tried again after a backoff that doubles up to kMaxRetryDelay; serve's schedule
// and webhooks do not start runs of these pipelines.
//
// Each consumer is a coroutine on serve's io_context: its waits (the poll, a backoff) are
// timers there, which the stop cancels. What blocks (connecting, balancing, asking the
// stream for news through libnats, the runs) runs on a thread of the consumer's own.
#include <atomic>
#include <list>
#include <memory>
#include <string>

#include "app/config/config.hpp"
#include "app/serve/pipeline_metrics.hpp"
#include "pipeline/store/pg/database.hpp"

namespace boost::asio {
class io_context;
class thread_pool;
}  // namespace boost::asio

namespace tidemark::app::serve {

class StreamConsumers {
 public:
  // The consumers run on `io`, which must outlive them (they end before io.run() returns).
  StreamConsumers(const app::config::Config& config, pipeline::db::Database& database,
                  PipelineMetrics& metrics, boost::asio::io_context& io);
  // Stops (request_stop) and waits for the blocking work in hand to end.
  ~StreamConsumers();
  StreamConsumers(const StreamConsumers&) = delete;
  StreamConsumers& operator=(const StreamConsumers&) = delete;

  // Starts a consumer for each nats pipeline of the config, on the io_context.
  void start();
  // On the io_context's thread: the runs in hand commit their batch and end, the waits are
  // cancelled; the workers free their partitions.
  void request_stop();

 private:
  struct Consumer;

  const app::config::Config& config_;
  pipeline::db::Database& database_;
  PipelineMetrics& metrics_;
  boost::asio::io_context& io_;
  std::atomic<bool> stopping_{false};  // also the runs' RunRequest::stop_requested
  std::list<Consumer> consumers_;
  std::unique_ptr<boost::asio::thread_pool> threads_;  // one per consumer: its blocking work
};

}  // namespace tidemark::app::serve
