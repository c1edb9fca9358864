// PartitionWorker (docs/scale-out.md "Workers"): a process's worker of a partitioned pipeline.
#include "pipeline/run/partition_worker.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "tests/support/test_database.hpp"

namespace tidemark::pipeline {
namespace {

using testing::TestDatabase;

// A PartitionWorker beats on its own thread while its owner is busy (a long batch is not a dead
// worker), and frees its partitions when it ends.
TEST(PartitionWorker, BeatsWhileAliveAndFreesItsPartitionsWhenItEnds) {
  TestDatabase db;
  LeaseSettings settings;
  settings.rebalance_interval = std::chrono::milliseconds(20);
  std::string id;
  {
    PartitionWorker worker(db.database(), "orders", 2, settings);
    id = worker.leases().worker_id();
    EXPECT_EQ(worker.balance().size(), 2u);
    const auto seen = [&] { return db.scalar("SELECT seen_at FROM tidemark_workers WHERE id = '" + id + "'"); };
    const auto first = seen();
    // Synchronised on the event (seen_at moves), bounded far above the 20 ms period.
    bool moved = false;
    for (int i = 0; i < 1000 && !moved; ++i) {
      db.scalar("SELECT pg_sleep(0.01)");
      moved = seen() != first;
    }
    EXPECT_TRUE(moved) << "no heartbeat in 10 s";
  }
  EXPECT_EQ(db.scalar("SELECT count(*) FROM tidemark_workers"), "0");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM tidemark_partitions WHERE owner IS NOT NULL"), "0");
}

// A worker balances on its database's pool: a balance every rebalance interval opens no
// connection of its own; the heartbeat's is the one session the worker keeps.
TEST(PartitionWorker, BalancesOnItsDatabasesPool) {
  TestDatabase db;
  db::Database database(db.url());
  PartitionWorker worker(database, "orders", 2);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(worker.balance().size(), 2u);
  const std::string ours = TestDatabase::sessions_of(getpid()) + " AND datname = '" + db.name() + "'";
  EXPECT_TRUE(db.await_sessions(ours, 2)) << "the heartbeat's session and one pooled connection";
}

}  // namespace
}  // namespace tidemark::pipeline
