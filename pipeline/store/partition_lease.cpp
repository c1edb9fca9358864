#include "pipeline/store/partition_lease.hpp"

#include <unistd.h>

#include <array>
#include <random>
#include <utility>

#include "pipeline/store/pg/row.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline {
namespace {

std::string host_name() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "unknown-host";
  return name.data();
}

}  // namespace

std::string new_worker_id() {
  std::random_device device;
  const auto random = (static_cast<std::uint64_t>(device()) << 32) | device();
  constexpr std::string_view kHex = "0123456789abcdef";
  std::string suffix;
  for (int shift = 60; shift >= 0; shift -= 4) suffix += kHex[(random >> shift) & 0xf];
  return host_name() + ":" + std::to_string(getpid()) + ":" + suffix;
}

PartitionLeases::PartitionLeases(std::string worker_id, std::string pipeline, int partitions, LeaseSettings settings)
    : worker_id_(std::move(worker_id)), pipeline_(std::move(pipeline)), partitions_(partitions), settings_(settings) {
  if (partitions_ < 1) throw std::invalid_argument("a partitioned pipeline needs at least one partition");
}

void PartitionLeases::heartbeat(pqxx::connection& connection) const {
  pqxx::nontransaction txn(connection);
  txn.exec_params(std::string(sql::kLeaseHeartbeat), worker_id_, pipeline_);
}

void PartitionLeases::register_session(pqxx::connection& connection) const {
  heartbeat(connection);  // the sessions' rows hang off the worker's row
  pqxx::nontransaction txn(connection);
  txn.exec_params(std::string(sql::kLeaseRegisterBackend), worker_id_);
}

std::vector<PartitionLease> PartitionLeases::balance(pqxx::connection& connection) const {
  const auto timeout_ms = settings_.owner_timeout.count();
  heartbeat(connection);
  {
    // Outside the balance's transaction: the signalled sessions end (and release their row
    // locks) while it runs, and signals cannot be rolled back anyway.
    pqxx::nontransaction txn(connection);
    txn.exec_params(std::string(sql::kLeaseEndDeadWorkers), pipeline_, timeout_ms);
    txn.exec_params(std::string(sql::kLeaseForgetDeadWorkers), pipeline_, timeout_ms);
  }
  pqxx::work txn(connection);
  txn.exec_params(std::string(sql::kLeaseEnsurePartitions), pipeline_, partitions_);
  txn.exec_params(std::string(sql::kLeaseReleaseSurplus), pipeline_, partitions_, worker_id_, timeout_ms);
  txn.exec_params(std::string(sql::kLeaseTake), pipeline_, partitions_, worker_id_, timeout_ms);
  std::vector<PartitionLease> owned;
  for (const auto& row : txn.exec_params(std::string(sql::kLeaseOwned), pipeline_, partitions_, worker_id_)) {
    const db::Row lease(row);
    owned.push_back({lease.get<int>("partition"), lease.get<std::int64_t>("epoch")});
  }
  txn.commit();
  return owned;
}

void PartitionLeases::fence(pqxx::transaction_base& txn, const PartitionLease& lease) const {
  const auto result = txn.exec_params(std::string(sql::kLeaseFence), pipeline_, lease.partition, worker_id_,
                                      lease.epoch, settings_.owner_timeout.count());
  if (result.affected_rows() == 1) return;
  throw LeaseLost("partition " + std::to_string(lease.partition) + " of pipeline '" + pipeline_ +
                  "' is no longer this worker's (epoch " + std::to_string(lease.epoch) +
                  "): another worker took it; this batch is rolled back");
}

void PartitionLeases::release_all(pqxx::connection& connection) const noexcept {
  try {
    pqxx::nontransaction txn(connection);
    txn.exec_params(std::string(sql::kLeaseReleaseAll), pipeline_, worker_id_);
  } catch (const std::exception&) {
    // The others take the partitions after the owner timeout instead.
  }
}

}  // namespace tidemark::pipeline
