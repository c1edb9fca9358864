#include "pipeline/run/partition_worker.hpp"

#include <spdlog/spdlog.h>

#include <memory>
#include <utility>

namespace tidemark::pipeline {

PartitionWorker::PartitionWorker(db::Database& database, std::string pipeline, int partitions,
                                 LeaseSettings settings)
    : database_(database),
      leases_(new_worker_id(), std::move(pipeline), partitions, settings) {
  // The heartbeat's session is recorded as the worker's from the start, so the worker counts
  // as alive exactly while its process holds it (or another of its sessions): when the process
  // dies, its partitions are free at once, not after the owner timeout.
  auto connection = database_.connect();
  leases_.register_session(*connection);
  heartbeat_ = std::thread([this, connection = std::move(connection)]() mutable { beat(std::move(connection)); });
}

PartitionWorker::~PartitionWorker() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  heartbeat_.join();
  try {
    // A connection of its own: release_all reports no failure, so a stale pooled one (after a
    // server restart) would keep the partitions until the owner timeout without a retry.
    leases_.release_all(*database_.connect());
  } catch (const std::exception& error) {
    spdlog::warn("worker {}: could not free its partitions ({}); the others take them after the owner timeout",
                 leases_.worker_id(), error.what());
  }
}

std::vector<PartitionLease> PartitionWorker::balance() {
  std::vector<PartitionLease> owned;
  database_.with_connection("balancing the partitions of worker " + leases_.worker_id(),
                            [&](pqxx::connection& connection) { owned = leases_.balance(connection); });
  return owned;
}

void PartitionWorker::beat(std::unique_ptr<pqxx::connection> connection) {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, leases_.settings().rebalance_interval, [this] { return stopping_; })) {
    lock.unlock();
    try {
      if (!connection || !connection->is_open()) {
        connection = database_.connect();
        leases_.register_session(*connection);
      } else {
        leases_.heartbeat(*connection);
      }
    } catch (const std::exception& error) {
      // The next beat tries again on a new connection; a worker silent for the owner timeout
      // loses its partitions, and its batches then fail their fence: never a wrong commit.
      spdlog::warn("worker {}: heartbeat failed: {}", leases_.worker_id(), error.what());
      connection.reset();
    }
    lock.lock();
  }
}

}  // namespace tidemark::pipeline
