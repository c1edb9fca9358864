#pragma once
// Runs of the pipelines serve drives: at most one active run per pipeline in this process
// (the advisory lock of the run controller covers other processes), and triggers that
// arrive while a pipeline runs coalesce into exactly one queued follow-up run.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "pipeline/store/pg/connection_pool.hpp"
#include "metrics/metrics.hpp"
#include "app/config/config.hpp"
#include "pipeline/run/run_controller.hpp"

namespace tidemark::app::serve {

struct TriggerRequest {
  std::string pipeline;
  std::string trigger;  // "schedule" or "webhook"
  bool replay = false;
  std::optional<std::string> reason;
  std::optional<std::string> request_id;  // webhook-id
};

struct TriggerResult {
  std::int64_t run_id = 0;
  std::string status;     // the run's status now
  bool repeated = false;  // the request_id had asked before: nothing new was started
  // The request_id was first seen on this other pipeline's path: nothing was done.
  std::optional<std::string> other_pipeline;
};

class RunQueue {
 public:
  RunQueue(const pipeline::Config& config, ConnectionPool& pool, metrics::Metrics& metrics);
  ~RunQueue();
  RunQueue(const RunQueue&) = delete;
  RunQueue& operator=(const RunQueue&) = delete;

  bool has_pipeline(const std::string& name) const { return slots_.count(name) != 0; }
  // Records the run (or finds the one it joins) and starts it when the pipeline is idle.
  // Blocking (database); nullopt once stopping.
  std::optional<TriggerResult> trigger(const TriggerRequest& request);
  // A webhook-id sent to `pipeline`'s path when the config has no such pipeline: binds the
  // id to that path unless it is bound already. Returns the pipeline it is bound to.
  std::string bind_request(const std::string& request_id, const std::string& pipeline);
  // Deletes the run_requests rows older than retention.requests; returns how many.
  std::size_t expire_requests();

  struct PipelineState {
    bool running = false;
    std::optional<std::int64_t> queued_run;
  };
  PipelineState state(const std::string& pipeline);

  // Counts a batch committed for pipeline `name` in the pipeline metrics: a run's, or the
  // one-record batch of a quarantine release. Thread-safe.
  void count_committed_batch(const std::string& name, const pipeline::OutcomeCounts& counts);

  // Graceful stop: active runs stop after the batch in hand commits, queued runs are
  // recorded as failed and never start. Thread-safe.
  void request_stop();
  // After request_stop: true when every run ended within `timeout`.
  bool wait_idle(std::chrono::milliseconds timeout);

 private:
  struct QueuedRun {
    std::int64_t run_id = 0;
    std::string trigger;
    bool replay = false;
    // A webhook asked for it: when another process holds the pipeline it waits for it,
    // where a scheduled run just skips the tick.
    bool wait_when_busy = false;
  };
  struct Slot {
    const pipeline::PipelineConfig* config = nullptr;
    std::mutex mutex;
    std::condition_variable changed;
    bool active = false;
    std::optional<QueuedRun> queued;  // the one follow-up
    std::thread worker;
  };
  enum class Attempt { kFinished, kBusy };

  void drive(Slot& slot, QueuedRun run);
  Attempt execute(Slot& slot, const QueuedRun& run);
  void fail_queued(std::int64_t run_id, const std::string& error);
  // What `request_id` got before, as the answer to a request on `pipeline`'s path; nullopt
  // when it is new here (an id bound to this path without a run is unbound, in `txn`).
  std::optional<TriggerResult> find_request(pqxx::transaction_base& txn, const std::string& request_id,
                                            const std::string& pipeline);
  // Expires run_requests at start-up and then hourly, until stopping.
  void expire_requests_periodically();

  pipeline::Config config_;
  ConnectionPool& pool_;
  metrics::Metrics& metrics_;
  std::map<std::string, std::unique_ptr<Slot>> slots_;
  std::atomic<bool> stopping_{false};
  std::mutex expiry_mutex_;
  std::condition_variable expiry_wakeup_;
  std::thread expiry_thread_;
};

}  // namespace tidemark::app::serve
