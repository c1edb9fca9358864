#pragma once
// One process's worker of a partitioned pipeline (docs/scale-out.md "Workers"): its id, its
// heartbeat, sent from a thread of its own on a connection of its own (recorded as one of the
// worker's sessions) every rebalance interval for as long as it lives (a long batch must not
// look like a dead worker), and its
// leases, which it balances when asked and frees when it ends.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/store/partition_lease.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::pipeline {

class PartitionWorker {
 public:
  // Sends the first heartbeat before it returns (errors propagate: the database is needed).
  // `database` outlives the worker: its heartbeat is a connection of its own (recorded as the
  // worker's session), its balance runs on the pool's.
  PartitionWorker(db::Database& database, std::string pipeline, int partitions, LeaseSettings settings = {});
  // Stops the heartbeat and frees the worker's partitions, so that the others take them at
  // their next balance rather than after the owner timeout.
  ~PartitionWorker();
  PartitionWorker(const PartitionWorker&) = delete;
  PartitionWorker& operator=(const PartitionWorker&) = delete;

  const PartitionLeases& leases() const { return leases_; }
  // Ends dead workers' sessions, gives up the surplus, takes the fair share (PartitionLeases::balance).
  std::vector<PartitionLease> balance();

 private:
  void beat(std::unique_ptr<pqxx::connection> connection);

  db::Database& database_;
  PartitionLeases leases_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread heartbeat_;
};

}  // namespace tidemark::pipeline
