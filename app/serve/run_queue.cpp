#include "app/serve/run_queue.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include "app/wiring/run_request.hpp"
#include "pipeline/store/committer.hpp"
#include "pipeline/store/pg/database.hpp"
#include "pipeline/store/pg/row.hpp"
#include "sql/statements.hpp"

namespace tidemark::app::serve {

namespace asio = boost::asio;

namespace {

// How often a webhook-requested run looks again for a pipeline another process holds.
constexpr auto kBusyRetry = std::chrono::seconds(1);
constexpr const char* kStoppedBeforeStart = "tidemark serve stopped before the run could start";

}  // namespace

RunQueue::RunQueue(const app::config::Config& config, pipeline::db::Database& pool, PipelineMetrics& metrics, asio::io_context& io)
    : config_(config),
      pool_(pool),
      metrics_(metrics),
      io_(io),
      idle_timer_(io),
      run_threads_(std::max<std::size_t>(config.pipelines.size(), 1)) {
  for (const auto& [name, pipeline] : config_.pipelines) {
    auto slot = std::make_unique<Slot>();
    slot->config = &pipeline;
    slot->busy_retry = std::make_unique<asio::steady_timer>(io);
    slots_.emplace(name, std::move(slot));
  }
}

RunQueue::~RunQueue() {
  // After a graceful stop nothing runs any more; otherwise the runs stop after their batch.
  stopping_ = true;
  run_threads_.join();
}

namespace {

// A row of sql/serve/find_request.sql.
struct FoundRequest {
  std::string pipeline;
  std::optional<std::int64_t> run_id;  // none: bound while the config had no such pipeline
  std::string status;
  static FoundRequest read(const pipeline::db::Row& row) {
    return {row.text("pipeline"), row.optional<std::int64_t>("run_id"), row.text("status")};
  }
};

}  // namespace

std::optional<TriggerResult> RunQueue::find_request(pqxx::transaction_base& txn, const std::string& request_id,
                                                    const std::string& pipeline) {
  const auto request =
      pipeline::db::read_first<FoundRequest>(txn.exec_params(std::string(sql::kServeFindRequest), request_id));
  if (!request) return std::nullopt;
  TriggerResult found;
  found.repeated = true;
  if (request->pipeline != pipeline) {
    found.other_pipeline = request->pipeline;
    return found;
  }
  if (!request->run_id) {
    // Bound while the config had no such pipeline, which it has now: asks for a run like a new id.
    txn.exec_params(std::string(sql::kServeUnbindRequest), request_id, pipeline);
    return std::nullopt;
  }
  found.run_id = *request->run_id;
  found.status = request->status;
  return found;
}

std::string RunQueue::bind_request(const std::string& request_id, const std::string& pipeline) {
  std::string bound;
  pool_.with_connection("recording a webhook-id", [&](pqxx::connection& connection) {
    pqxx::work txn(connection);
    // Also an id past retention.requests whose run is kept belongs to that run's pipeline.
    const auto request =
        pipeline::db::read_first<FoundRequest>(txn.exec_params(std::string(sql::kServeFindRequest), request_id));
    bound = request ? request->pipeline
                    : pipeline::db::Row(txn.exec_params1(std::string(sql::kServeBindRequest), request_id, pipeline))
                          .text("pipeline");
    txn.commit();
  });
  return bound;
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
        result.run_id = txn.exec_params1(std::string(sql::kServeEnqueueRun), request.pipeline, std::string(to_string(request.trigger)),
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
  } catch (const std::exception& error) {
    if (!pipeline::db::is_unique_violation(error)) throw;
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
    slot.queued->wait_when_busy = slot.queued->wait_when_busy || request.trigger == app::config::Trigger::kWebhook;
    return result;
  }
  QueuedRun run{result.run_id, request.trigger, request.replay, request.trigger == app::config::Trigger::kWebhook};
  if (slot.active) {
    slot.queued = run;
    return result;
  }
  slot.active = true;
  asio::post(run_threads_, [this, &slot, run] { drive(slot, run); });
  return result;
}

void RunQueue::drive(Slot& slot, QueuedRun run) {
  const Attempt attempt = execute(slot, run);
  std::unique_lock lock(slot.mutex);
  if (attempt == Attempt::kBusy && run.wait_when_busy) {
    asio::post(io_, [this, &slot, run] { retry_when_free(slot, run); });
    return;
  }
  next(slot);
}

void RunQueue::retry_when_free(Slot& slot, QueuedRun run) {
  const auto again = [this, &slot, run](const boost::system::error_code&) {
    asio::post(run_threads_, [this, &slot, run] {
      if (!stopping_) return drive(slot, run);
      std::unique_lock lock(slot.mutex);
      fail_queued(run.run_id, kStoppedBeforeStart);
      next(slot);
    });
  };
  if (stopping_) return again({});
  // request_stop cancels the timer: the run is then recorded as failed at once.
  slot.busy_retry->expires_after(kBusyRetry);
  slot.busy_retry->async_wait(again);
}

void RunQueue::next(Slot& slot) {
  if (slot.queued && !stopping_) {
    const QueuedRun run = *slot.queued;
    slot.queued.reset();
    asio::post(run_threads_, [this, &slot, run] { drive(slot, run); });
    return;
  }
  if (slot.queued) {
    fail_queued(slot.queued->run_id, kStoppedBeforeStart);
    slot.queued.reset();
  }
  slot.active = false;
  // The last run to end ends a wait_idle.
  asio::post(io_, [this] {
    if (idle()) idle_timer_.cancel();
  });
}

bool RunQueue::idle() {
  for (auto& [name, slot] : slots_) {
    std::lock_guard lock(slot->mutex);
    if (slot->active) return false;
  }
  return true;
}

RunQueue::Attempt RunQueue::execute(Slot& slot, const QueuedRun& run) {
  const std::string& name = slot.config->name;
  pipeline::RunRequest request = request_from_config(*slot.config, config_.entity(slot.config->entity));
  request.database = &pool_;
  request.trigger = to_string(run.trigger);
  request.run_id = run.run_id;
  request.replay = run.replay;
  request.stop_requested = &stopping_;
  request.on_batch = [&](const pipeline::BatchReport& report) { metrics_.run_batch(name, report); };
  spdlog::info("pipeline {}: starting {} run {}{}", name, to_string(run.trigger), run.run_id, run.replay ? " (replay)" : "");
  try {
    const pipeline::RunSummary summary = pipeline::run_pipeline(request);
    metrics_.files_reread(name, summary.rewritten_files.size());
    metrics_.run_ended(name, run.trigger, summary.stopped_early ? "stopped" : "succeeded");
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
    metrics_.run_ended(name, run.trigger, "failed");
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
  state.next_scheduled = slot.next_scheduled;
  return state;
}

void RunQueue::scheduled(const std::string& pipeline, std::chrono::system_clock::time_point next) {
  Slot& slot = *slots_.at(pipeline);
  std::lock_guard lock(slot.mutex);
  slot.next_scheduled = next;
}

void RunQueue::request_stop() {
  stopping_ = true;
  for (auto& [name, slot] : slots_) slot->busy_retry->cancel();
}

asio::awaitable<bool> RunQueue::wait_idle(std::chrono::milliseconds timeout) {
  if (idle()) co_return true;
  idle_timer_.expires_after(timeout);
  boost::system::error_code cancelled;
  co_await idle_timer_.async_wait(asio::redirect_error(asio::use_awaitable, cancelled));
  co_return idle();
}

}  // namespace tidemark::app::serve
