#pragma once
// Workers of a partitioned pipeline (a NATS source's streams) share its partitions through
// PostgreSQL alone (docs/scale-out.md "Workers", migration 0019): each worker sends a
// heartbeat, takes at most its fair share of partitions, ceil(partitions / live workers),
// and commits a partition's batches only while it owns the partition at the epoch it took it
// with. A taker ends a silent owner's sessions and bumps the epoch, so a worker that was paused
// (SIGSTOP) and resumes can never commit again: a session advisory lock cannot do that, since
// a stopped process keeps its connection and its lock.
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "pipeline/core/error.hpp"

namespace tidemark::pipeline {

struct LeaseSettings {
  // A worker whose heartbeat is older than this is dead (as is one whose recorded sessions
  // have all ended): its partitions may be taken.
  std::chrono::milliseconds owner_timeout{std::chrono::seconds(30)};
  // How often a worker balances (takes its share, gives up its surplus); also its heartbeat's
  // period, which must stay well below owner_timeout.
  std::chrono::milliseconds rebalance_interval{std::chrono::seconds(10)};
};

// One partition a worker owns, and the epoch it took it with.
struct PartitionLease {
  int partition = 0;
  std::int64_t epoch = 0;
  friend bool operator==(const PartitionLease&, const PartitionLease&) = default;
};

// The worker no longer owns the partition at that epoch: the batch must roll back, and the
// worker must take partitions anew (and read their checkpoints again) before it goes on.
struct LeaseLost : tidemark::Error {
  explicit LeaseLost(const std::string& message) : tidemark::Error(tidemark::ErrorKind::kConflict, message) {}
};

// A new worker id, "host:pid:random", unique across hosts and restarts.
std::string new_worker_id();

// One worker's view of one pipeline's leases. Holds no connection: every call runs on the
// connection it is given, so the caller decides which session does what (the fence runs in
// the batch's own transaction).
class PartitionLeases {
 public:
  PartitionLeases(std::string worker_id, std::string pipeline, int partitions, LeaseSettings settings = {});

  const std::string& worker_id() const { return worker_id_; }
  const LeaseSettings& settings() const { return settings_; }

  // Records that the worker is alive now.
  void heartbeat(pqxx::connection& connection) const;
  // Records `connection`'s session as one of the worker's, so that a taker can end it, and a
  // worker whose recorded sessions have all ended counts as dead at once (a killed process);
  // call on every (re)connect of a connection that commits batches or sends the heartbeat.
  void register_session(pqxx::connection& connection) const;
  // A heartbeat, then: ends the sessions of dead workers, gives up the surplus over the fair
  // share, takes free and dead workers' partitions up to it, and returns every partition the
  // worker owns now, in order. A partition whose lease changed since the last call has a new
  // epoch: its position must be read from its checkpoint again.
  std::vector<PartitionLease> balance(pqxx::connection& connection) const;
  // In a batch's transaction, before it writes: throws LeaseLost unless the worker still owns
  // `lease` (same partition, same epoch).
  void fence(pqxx::transaction_base& txn, const PartitionLease& lease) const;
  // Frees every partition the worker owns and removes it from the workers (a clean stop).
  // Never throws: a worker that cannot say goodbye is taken over after the owner timeout.
  void release_all(pqxx::connection& connection) const noexcept;

 private:
  std::string worker_id_;
  std::string pipeline_;
  int partitions_;
  LeaseSettings settings_;
};

}  // namespace tidemark::pipeline
