// PartitionWorker (docs/scale-out.md "Workers"): a process's worker of a partitioned pipeline.
#include "pipeline/run/partition_worker.hpp"

#include <gtest/gtest.h>

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
    PartitionWorker worker(db.url(), "orders", 2, settings);
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

}  // namespace
}  // namespace tidemark::pipeline
