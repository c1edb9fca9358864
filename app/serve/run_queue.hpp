#pragma once
// Runs of the pipelines serve drives: at most one active run per pipeline in this process
// (the advisory lock of the run controller covers other processes), and triggers that
// arrive while a pipeline runs coalesce into exactly one queued follow-up run.
// Runs are blocking libpqxx work: each runs on a thread of the queue's run pool (one thread
// per pipeline, so a run never waits for another's). Everything that waits — a webhook run
// looking again for a pipeline another process holds, the stop waiting for the runs — is a
// timer on serve's io_context; stopping is cancelling those timers, observed by the runs
// through RunRequest::stop_requested.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include "app/config/config.hpp"
#include "app/serve/pipeline_metrics.hpp"
#include "pipeline/run/run_controller.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::app::serve {

struct TriggerRequest {
  std::string pipeline;
  app::config::Trigger trigger = app::config::Trigger::kSchedule;  // serve starts scheduled and webhook runs
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
  // `io` runs the queue's timers; it need not run yet.
  RunQueue(const app::config::Config& config, pipeline::db::Database& pool, PipelineMetrics& metrics, boost::asio::io_context& io);
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

  struct PipelineState {
    bool running = false;
    std::optional<std::int64_t> queued_run;
    std::optional<std::chrono::system_clock::time_point> next_scheduled;  // the schedule's next tick, when it has one
  };
  PipelineState state(const std::string& pipeline);
  // Serve's schedule loop says when it triggers `pipeline` next (GET /v1/pipelines shows it).
  void scheduled(const std::string& pipeline, std::chrono::system_clock::time_point next);

  // Graceful stop: active runs stop after the batch in hand commits, queued runs are
  // recorded as failed and never start. Call on the io_context's thread.
  void request_stop();
  // After request_stop, on the io_context: true once every run has ended, false when some
  // still run after `timeout`.
  boost::asio::awaitable<bool> wait_idle(std::chrono::milliseconds timeout);

 private:
  struct QueuedRun {
    std::int64_t run_id = 0;
    app::config::Trigger trigger;
    bool replay = false;
    // A webhook asked for it: when another process holds the pipeline it waits for it,
    // where a scheduled run just skips the tick.
    bool wait_when_busy = false;
  };
  struct Slot {
    const app::config::PipelineConfig* config = nullptr;
    std::mutex mutex;
    bool active = false;
    std::optional<QueuedRun> queued;  // the one follow-up
    std::optional<std::chrono::system_clock::time_point> next_scheduled;
    // A webhook run waiting for the pipeline another process holds (io thread only).
    std::unique_ptr<boost::asio::steady_timer> busy_retry;
  };
  enum class Attempt { kFinished, kBusy };

  // On a run thread: one attempt of `run`, then what follows it.
  void drive(Slot& slot, QueuedRun run);
  // On the io thread: drive `run` again after kBusyRetry, or at once when stopping.
  void retry_when_free(Slot& slot, QueuedRun run);
  // Under slot.mutex, once a run has ended: starts the queued follow-up, or (stopping)
  // records it as failed and leaves the slot idle.
  void next(Slot& slot);
  bool idle();
  Attempt execute(Slot& slot, const QueuedRun& run);
  void fail_queued(std::int64_t run_id, const std::string& error);
  // What `request_id` got before, as the answer to a request on `pipeline`'s path; nullopt
  // when it is new here (an id bound to this path without a run is unbound, in `txn`).
  std::optional<TriggerResult> find_request(pqxx::transaction_base& txn, const std::string& request_id,
                                            const std::string& pipeline);

  app::config::Config config_;
  pipeline::db::Database& pool_;
  PipelineMetrics& metrics_;
  boost::asio::io_context& io_;
  std::map<std::string, std::unique_ptr<Slot>> slots_;
  // Set on the io thread by request_stop; read by the runs (RunRequest::stop_requested).
  std::atomic<bool> stopping_{false};
  // Expires when wait_idle gives up; cancelled when the last run ends (io thread only).
  boost::asio::steady_timer idle_timer_;
  boost::asio::thread_pool run_threads_;
};

}  // namespace tidemark::app::serve
