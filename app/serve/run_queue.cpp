#include "app/serve/run_queue.hpp"

#include <ctime>

#include <spdlog/spdlog.h>

#include "app/wiring/run_request.hpp"
#include "pipeline/store/committer.hpp"
#include "sql/statements.hpp"

namespace tidemark::app::serve {

namespace {

// How often a webhook-requested run looks again for a pipeline another process holds.
constexpr auto kBusyRetry = std::chrono::seconds(1);
// How often expired run_requests are deleted (retention.requests is days, by default).
constexpr auto kExpiryInterval = std::chrono::hours(1);

}  // namespace

RunQueue::RunQueue(const pipeline::Config& config, ConnectionPool& pool, metrics::Metrics& metrics)
    : config_(config), pool_(pool), metrics_(metrics) {
  for (const auto& [name, pipeline] : config_.pipelines) {
    auto slot = std::make_unique<Slot>();
    slot->config = &pipeline;
    slots_.emplace(name, std::move(slot));
    // Every series exists from the start, so rates and alerts see zeros rather than gaps.
    for (pipeline::Outcome outcome : pipeline::kAllOutcomes) {
      metrics_.records_total.Add({{"pipeline", name}, {"outcome", std::string(pipeline::to_string(outcome))}});
    }
    for (const char* status : {"committed", "failed"}) metrics_.batches_total.Add({{"pipeline", name}, {"status", status}});
    for (const char* trigger : {"schedule", "webhook"}) {
      for (const char* status : {"succeeded", "stopped", "failed"}) {
        metrics_.runs_total.Add({{"pipeline", name}, {"trigger", trigger}, {"status", status}});
      }
    }
    metrics_.batch_duration_seconds.Add({{"pipeline", name}}, metrics::duration_buckets());
  }
  // The checkpoint gauge starts at the last advance recorded, not at 0 (which would look stuck).
  try {
    pool_.with_connection("reading checkpoint times", [&](pqxx::connection& connection) {
      pqxx::nontransaction txn(connection);
      for (const auto& [name, slot] : slots_) {
        const auto row = txn.exec_params1(std::string(sql::kServeCheckpointTime), name);
        if (!row[0].is_null()) {
          metrics_.checkpoint_timestamp_seconds.Add({{"pipeline", name}}).Set(row[0].as<double>());
        }
      }
    });
  } catch (const std::exception& error) {
    spdlog::warn("could not read checkpoint times for the metrics: {}", error.what());
  }
  expiry_thread_ = std::thread([this] { expire_requests_periodically(); });
}

RunQueue::~RunQueue() {
  request_stop();
  for (auto& [name, slot] : slots_) {
    if (slot->worker.joinable()) slot->worker.join();
  }
  expiry_thread_.join();
}

std::optional<TriggerResult> RunQueue::find_request(pqxx::transaction_base& txn, const std::string& request_id,
                                                    const std::string& pipeline) {
  const auto rows = txn.exec_params(std::string(sql::kServeFindRequest), request_id);
  if (rows.empty()) return std::nullopt;
  TriggerResult found;
  found.repeated = true;
  if (rows[0][0].c_str() != pipeline) {
    found.other_pipeline = rows[0][0].c_str();
    return found;
  }
  if (rows[0][1].is_null()) {
    // Bound while the config had no such pipeline, which it has now: asks for a run like a new id.
    txn.exec_params(std::string(sql::kServeUnbindRequest), request_id, pipeline);
    return std::nullopt;
  }
  found.run_id = rows[0][1].as<std::int64_t>();
  found.status = rows[0][2].c_str();
  return found;
}

std::string RunQueue::bind_request(const std::string& request_id, const std::string& pipeline) {
  std::string bound;
  pool_.with_connection("recording a webhook-id", [&](pqxx::connection& connection) {
    pqxx::work txn(connection);
    // Also an id past retention.requests whose run is kept belongs to that run's pipeline.
    const auto rows = txn.exec_params(std::string(sql::kServeFindRequest), request_id);
    bound = rows.empty() ? txn.exec_params1(std::string(sql::kServeBindRequest), request_id, pipeline)[0].c_str()
                         : rows[0][0].c_str();
    txn.commit();
  });
  return bound;
}

std::size_t RunQueue::expire_requests() {
  std::size_t deleted = 0;
  pool_.with_connection("expiring webhook-ids", [&](pqxx::connection& connection) {
    pqxx::work txn(connection);
    deleted = static_cast<std::size_t>(
        txn.exec_params(std::string(sql::kServeExpireRequests), config_.retention.requests.count()).affected_rows());
    txn.commit();
  });
  return deleted;
}

void RunQueue::expire_requests_periodically() {
  std::unique_lock lock(expiry_mutex_);
  while (!stopping_) {
    lock.unlock();
    try {
      const std::size_t deleted = expire_requests();
      if (deleted > 0) spdlog::info("retention: {} webhook-ids past retention.requests deleted", deleted);
    } catch (const std::exception& error) {
      spdlog::error("retention: could not delete expired webhook-ids: {}", error.what());
    }
    lock.lock();
    expiry_wakeup_.wait_for(lock, kExpiryInterval, [this] { return stopping_.load(); });
  }
}

std::optional<TriggerResult> RunQueue::trigger(const TriggerRequest& request) {
  Slot& slot = *slots_.at(request.pipeline);
  // One trigger of a pipeline at a time: deciding between "new run" and "join the queued
  // follow-up" and recording that decision must not interleave.
  std::unique_lock lock(slot.mutex);
  if (stopping_) return std::nullopt;
  if (!request.request_id && slot.queued) return TriggerResult{slot.queued->run_id, "queued", false};

  TriggerResult result;
  try {
    pool_.with_connection("recording a run request", [&](pqxx::connection& connection) {
      result = TriggerResult{};
      pqxx::work txn(connection);
      if (request.request_id) {
        if (auto found = find_request(txn, *request.request_id, request.pipeline)) {
          result = std::move(*found);
          return;
        }
      }
      if (slot.queued) {
        result.run_id = slot.queued->run_id;
        if (request.replay && !slot.queued->replay) txn.exec_params(std::string(sql::kServeUpgradeToReplay), result.run_id);
      } else {
        result.run_id = txn.exec_params1(std::string(sql::kServeEnqueueRun), request.pipeline, request.trigger,
                                         request.replay ? "replay" : "resume", request.request_id, request.reason)[0]
                            .as<std::int64_t>();
      }
      if (request.request_id) {
        txn.exec_params(std::string(sql::kServeRecordRequest), *request.request_id, result.run_id, request.pipeline);
      }
      txn.commit();
      result.status = "queued";
      result.repeated = false;
    });
  } catch (const pqxx::unique_violation&) {
    // Another serve process (or a request on another path) recorded the same webhook-id
    // first: answer with what it got.
    std::optional<TriggerResult> found;
    pool_.with_connection("looking up a webhook-id", [&](pqxx::connection& connection) {
      pqxx::nontransaction txn(connection);
      found = find_request(txn, *request.request_id, request.pipeline);
    });
    if (found) return found;
    throw;
  }
  if (result.repeated) return result;

  if (slot.queued) {
    slot.queued->replay = slot.queued->replay || request.replay;
    slot.queued->wait_when_busy = slot.queued->wait_when_busy || request.trigger == "webhook";
    return result;
  }
  QueuedRun run{result.run_id, request.trigger, request.replay, request.trigger == "webhook"};
  if (slot.active) {
    slot.queued = run;
    return result;
  }
  slot.active = true;
  if (slot.worker.joinable()) slot.worker.join();  // the previous drive has left its loop
  slot.worker = std::thread([this, &slot, run] { drive(slot, run); });
  return result;
}

void RunQueue::drive(Slot& slot, QueuedRun run) {
  for (;;) {
    const Attempt attempt = execute(slot, run);
    std::unique_lock lock(slot.mutex);
    if (attempt == Attempt::kBusy && run.wait_when_busy) {
      slot.changed.wait_for(lock, kBusyRetry, [this] { return stopping_.load(); });
      if (!stopping_) continue;
      fail_queued(run.run_id, "tidemark serve stopped before the run could start");
    }
    if (slot.queued && !stopping_) {
      run = *slot.queued;
      slot.queued.reset();
      continue;
    }
    if (slot.queued) {
      fail_queued(slot.queued->run_id, "tidemark serve stopped before the run could start");
      slot.queued.reset();
    }
    slot.active = false;
    slot.changed.notify_all();
    return;
  }
}

void RunQueue::count_committed_batch(const std::string& name, const pipeline::OutcomeCounts& counts) {
  for (pipeline::Outcome outcome : pipeline::kAllOutcomes) {
    // A configured pipeline's series exist from the start; a count of 0 creates none for
    // a pipeline gone from the config (a late quarantine release).
    if (counts[outcome] == 0) continue;
    metrics_.records_total.Add({{"pipeline", name}, {"outcome", std::string(pipeline::to_string(outcome))}})
        .Increment(static_cast<double>(counts[outcome]));
  }
  metrics_.batches_total.Add({{"pipeline", name}, {"status", "committed"}}).Increment();
}

RunQueue::Attempt RunQueue::execute(Slot& slot, const QueuedRun& run) {
  const std::string& name = slot.config->name;
  pipeline::RunRequest request = request_from_config(*slot.config);
  request.database_url = pool_.url();
  request.trigger = run.trigger;
  request.run_id = run.run_id;
  request.replay = run.replay;
  request.stop_requested = &stopping_;
  request.on_batch = [&](const pipeline::BatchReport& report) {
    count_committed_batch(name, report.counts);
    metrics_.batch_duration_seconds.Add({{"pipeline", name}}, metrics::duration_buckets()).Observe(report.seconds);
    metrics_.checkpoint_timestamp_seconds.Add({{"pipeline", name}}).Set(static_cast<double>(std::time(nullptr)));
  };
  spdlog::info("pipeline {}: starting {} run {}{}", name, run.trigger, run.run_id, run.replay ? " (replay)" : "");
  try {
    const pipeline::RunSummary summary = pipeline::run_pipeline(request);
    metrics_.runs_total
        .Add({{"pipeline", name}, {"trigger", run.trigger}, {"status", summary.stopped_early ? "stopped" : "succeeded"}})
        .Increment();
    return Attempt::kFinished;
  } catch (const pipeline::PipelineBusy& busy) {
    if (run.wait_when_busy) {
      spdlog::info("pipeline {}: run {} waits: {}", name, run.run_id, busy.what());
    } else {
      spdlog::info("pipeline {}: skipping scheduled run: {}", name, busy.what());
      try {
        pool_.with_connection("discarding a skipped run", [&](pqxx::connection& connection) {
          pqxx::work txn(connection);
          txn.exec_params(std::string(sql::kServeDiscardSkippedRun), run.run_id);
          txn.commit();
        });
      } catch (const std::exception& error) {
        spdlog::error("could not discard skipped run {}: {}", run.run_id, error.what());
      }
    }
    return Attempt::kBusy;
  } catch (const std::exception& error) {
    spdlog::error("pipeline {}: run {} failed: {}", name, run.run_id, error.what());
    metrics_.runs_total.Add({{"pipeline", name}, {"trigger", run.trigger}, {"status", "failed"}}).Increment();
    metrics_.batches_total.Add({{"pipeline", name}, {"status", "failed"}}).Increment();
    // A run that failed before it started (its source could not be opened) is still queued.
    fail_queued(run.run_id, error.what());
    return Attempt::kFinished;
  }
}

void RunQueue::fail_queued(std::int64_t run_id, const std::string& error) {
  try {
    pool_.with_connection("recording a run as failed", [&](pqxx::connection& connection) {
      pqxx::work txn(connection);
      txn.exec_params(std::string(sql::kServeFailQueuedRun), run_id, error);
      txn.commit();
    });
  } catch (const std::exception& also) {
    spdlog::error("could not record run {} as failed: {}", run_id, also.what());
  }
}

RunQueue::PipelineState RunQueue::state(const std::string& pipeline) {
  Slot& slot = *slots_.at(pipeline);
  std::lock_guard lock(slot.mutex);
  PipelineState state;
  state.running = slot.active;
  if (slot.queued) state.queued_run = slot.queued->run_id;
  return state;
}

void RunQueue::request_stop() {
  {
    std::lock_guard lock(expiry_mutex_);
    stopping_ = true;
  }
  expiry_wakeup_.notify_all();
  for (auto& [name, slot] : slots_) {
    std::lock_guard lock(slot->mutex);
    slot->changed.notify_all();
  }
}

bool RunQueue::wait_idle(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (auto& [name, slot] : slots_) {
    std::unique_lock lock(slot->mutex);
    if (!slot->changed.wait_until(lock, deadline, [&] { return !slot->active; })) return false;
  }
  return true;
}

}  // namespace tidemark::app::serve
