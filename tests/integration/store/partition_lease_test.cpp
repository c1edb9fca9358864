// PartitionLeases (migration 0019, docs/scale-out.md "Workers"): workers share a partitioned
// pipeline's partitions through PostgreSQL alone. A worker's death is its heartbeat's age, so
// the tests age a heartbeat by writing seen_at rather than by waiting out a timeout.
#include "pipeline/store/partition_lease.hpp"
#include "pipeline/run/run_controller.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/test_database.hpp"

namespace tidemark::pipeline {
namespace {

using testing::TestDatabase;

constexpr int kPartitions = 4;

std::vector<int> partitions_of(const std::vector<PartitionLease>& leases) {
  std::vector<int> out;
  for (const auto& lease : leases) out.push_back(lease.partition);
  return out;
}

// The worker's heartbeat as if it had last beaten an hour ago: dead for any owner timeout.
void silence(const TestDatabase& db, const PartitionLeases& worker) {
  db.scalar("UPDATE tidemark_workers SET seen_at = now() - interval '1 hour' WHERE id = '" + worker.worker_id() + "'");
}

std::string backend_pid(pqxx::connection& connection) {
  pqxx::nontransaction txn(connection);
  return txn.exec("SELECT pg_backend_pid()")[0][0].as<std::string>();
}

TEST(PartitionLeases, ALoneWorkerTakesEveryPartitionAtEpochOne) {
  TestDatabase db;
  auto connection = db.connect();
  const PartitionLeases worker("a", "orders", kPartitions);
  const auto owned = worker.balance(*connection);
  EXPECT_EQ(owned, (std::vector<PartitionLease>{{0, 1}, {1, 1}, {2, 1}, {3, 1}}));
  EXPECT_EQ(worker.balance(*connection), owned) << "a second balance changes nothing";
}

TEST(PartitionLeases, AJoiningWorkerGetsHalfOnceTheOwnerGivesUpItsSurplus) {
  TestDatabase db;
  auto connection = db.connect();
  const PartitionLeases a("a", "orders", kPartitions);
  const PartitionLeases b("b", "orders", kPartitions);
  ASSERT_EQ(a.balance(*connection).size(), 4u);
  EXPECT_TRUE(b.balance(*connection).empty()) << "a live owner's partitions are never taken";
  EXPECT_EQ(partitions_of(a.balance(*connection)), (std::vector<int>{0, 1})) << "a keeps its fair share, ceil(4 / 2)";
  EXPECT_EQ(b.balance(*connection), (std::vector<PartitionLease>{{2, 2}, {3, 2}})) << "each change of owner bumps the epoch";
  // A third worker: shares are ceil(4 / 3) = 2, so the first two keep theirs and it waits.
  const PartitionLeases c("c", "orders", kPartitions);
  EXPECT_TRUE(c.balance(*connection).empty());
  EXPECT_EQ(a.balance(*connection).size(), 2u);
  EXPECT_EQ(b.balance(*connection).size(), 2u);
  // b leaves cleanly: its partitions are free at once, and the next balances share them.
  b.release_all(*connection);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM tidemark_workers WHERE id = 'b'"), "0");
  EXPECT_EQ(partitions_of(c.balance(*connection)), (std::vector<int>{2, 3}));
}

TEST(PartitionLeases, AWorkerWhoseHeartbeatStoppedIsTakenOverAndItsSessionsEnded) {
  TestDatabase db;
  auto a_connection = db.connect();
  auto b_connection = db.connect();
  const PartitionLeases a("a", "orders", kPartitions);
  const PartitionLeases b("b", "orders", kPartitions);
  a.register_session(*a_connection);
  const auto a_pid = backend_pid(*a_connection);
  ASSERT_EQ(a.balance(*a_connection).size(), 4u);
  ASSERT_EQ(b.balance(*b_connection).size(), 0u);

  silence(db, a);
  const auto taken = b.balance(*b_connection);
  EXPECT_EQ(taken, (std::vector<PartitionLease>{{0, 2}, {1, 2}, {2, 2}, {3, 2}}));
  ASSERT_TRUE(db.await_no_session("pid = " + a_pid)) << "session " << a_pid << " was signalled but never ended";
  EXPECT_THROW(backend_pid(*a_connection), pqxx::broken_connection) << "the taker ended a's recorded session";

  // a resumes on a new session: its heartbeat makes it live again, but its epochs are gone.
  auto resumed = db.connect();
  pqxx::work txn(*resumed);
  EXPECT_THROW(a.fence(txn, {0, 1}), LeaseLost);
}

// A killed process's sessions end with it: a worker whose recorded sessions have all ended is
// dead at once, however fresh its heartbeat.
TEST(PartitionLeases, AWorkerWhoseSessionsHaveAllEndedIsDeadAtOnce) {
  TestDatabase db;
  auto a_connection = db.connect();
  auto b_connection = db.connect();
  const PartitionLeases a("a", "orders", kPartitions);
  const PartitionLeases b("b", "orders", kPartitions);
  a.register_session(*a_connection);
  ASSERT_EQ(a.balance(*a_connection).size(), 4u);
  EXPECT_TRUE(b.balance(*b_connection).empty()) << "a holds a session: alive";
  const auto a_pid = backend_pid(*a_connection);
  a_connection.reset();  // as the process's death closes it
  ASSERT_TRUE(db.await_no_session("pid = " + a_pid)) << "session " << a_pid << " was signalled but never ended";
  EXPECT_EQ(b.balance(*b_connection).size(), 4u) << "a's heartbeat is fresh, but it has no session left";
}

TEST(PartitionLeases, AStoppedOwnerInTheMiddleOfABatchCannotCommitAfterTheTakeover) {
  TestDatabase db;
  auto a_connection = db.connect();
  auto b_connection = db.connect();
  const PartitionLeases a("a", "orders", 1);
  const PartitionLeases b("b", "orders", 1);
  a.register_session(*a_connection);
  const auto a_pid = backend_pid(*a_connection);
  const auto leases = a.balance(*a_connection);
  ASSERT_EQ(leases.size(), 1u);

  // a is inside a batch's transaction, past its fence (it holds the partition's row), when it
  // is stopped: a SIGSTOPped process keeps its connection and its open transaction.
  db.scalar("CREATE TABLE written_by_a (x int)");
  pqxx::work batch(*a_connection);
  a.fence(batch, leases[0]);
  batch.exec("INSERT INTO written_by_a VALUES (1)");

  silence(db, a);
  // b's first balance signals a's session; the row is free once the session has ended.
  std::vector<PartitionLease> taken = b.balance(*b_connection);
  ASSERT_TRUE(db.await_no_session("pid = " + a_pid)) << "session " << a_pid << " was signalled but never ended";
  if (taken.empty()) taken = b.balance(*b_connection);
  EXPECT_EQ(taken, (std::vector<PartitionLease>{{0, 2}}));
  EXPECT_ANY_THROW(batch.commit()) << "a's session is gone";
  EXPECT_EQ(db.scalar("SELECT count(*) FROM written_by_a"), "0") << "a's batch never committed";
}

TEST(PartitionLeases, TheFenceHoldsOnlyForTheOwnerAtItsEpoch) {
  TestDatabase db;
  auto connection = db.connect();
  const PartitionLeases a("a", "orders", 2);
  const PartitionLeases b("b", "orders", 2);
  const auto leases = a.balance(*connection);
  ASSERT_EQ(leases.size(), 2u);
  {
    pqxx::work txn(*connection);
    EXPECT_NO_THROW(a.fence(txn, leases[1]));
  }
  {
    pqxx::work txn(*connection);
    EXPECT_THROW(a.fence(txn, {1, leases[1].epoch + 1}), LeaseLost) << "another epoch";
  }
  {
    pqxx::work txn(*connection);
    EXPECT_THROW(b.fence(txn, leases[1]), LeaseLost) << "another worker";
  }
  a.release_all(*connection);
  pqxx::work txn(*connection);
  EXPECT_THROW(a.fence(txn, leases[1]), LeaseLost) << "released";
}

TEST(PartitionLeases, FewerConfiguredPartitionsGiveUpTheOnesBeyondTheCount) {
  TestDatabase db;
  auto connection = db.connect();
  ASSERT_EQ(PartitionLeases("a", "orders", 4).balance(*connection).size(), 4u);
  EXPECT_EQ(partitions_of(PartitionLeases("a", "orders", 2).balance(*connection)), (std::vector<int>{0, 1}));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM tidemark_partitions WHERE owner IS NOT NULL"), "2");
}

TEST(PartitionLeases, PipelinesAreIndependent) {
  TestDatabase db;
  auto connection = db.connect();
  EXPECT_EQ(PartitionLeases("a", "orders", 2).balance(*connection).size(), 2u);
  EXPECT_EQ(PartitionLeases("b", "refunds", 2).balance(*connection).size(), 2u);
}

// Partition runs start without the pipeline's lock: a run left 'running' is abandoned only
// when its worker is dead, and the locked sweep of an unpartitioned run leaves workers' runs alone.
TEST(PartitionLeases, APartitionsRunLeftRunningFailsOnlyOnceItsWorkerIsDead) {
  TestDatabase db;
  auto connection = db.connect();
  const PartitionLeases a("a", "orders", 2);
  const PartitionLeases b("b", "orders", 2);
  const auto a_leases = a.balance(*connection);
  ASSERT_EQ(a_leases.size(), 2u);
  RunRequest request;
  request.pipeline = "orders";
  request.partition = PartitionOwnership{&a, a_leases[0]};
  const auto a_run = std::to_string(start_run(*connection, request));
  const auto status = [&] { return db.scalar("SELECT status || ' ' || worker FROM runs WHERE id = " + a_run); };
  EXPECT_EQ(status(), "running a");

  RunRequest locked;  // as `quarantine release` or an unpartitioned run would
  locked.pipeline = "orders";
  start_run(*connection, locked);
  EXPECT_EQ(status(), "running a") << "the locked sweep never fails a worker's run";

  request.partition = PartitionOwnership{&b, {1, 2}};
  start_run(*connection, request);
  EXPECT_EQ(status(), "running a") << "a is alive";
  silence(db, a);
  start_run(*connection, request);
  EXPECT_EQ(status(), "failed a");
}

TEST(PartitionLeases, WorkerIdsNameTheHostAndProcessAndDifferEachTime) {
  const auto first = new_worker_id();
  EXPECT_NE(first, new_worker_id());
  EXPECT_NE(first.find(":" + std::to_string(getpid()) + ":"), std::string::npos) << first;
}

}  // namespace
}  // namespace tidemark::pipeline
