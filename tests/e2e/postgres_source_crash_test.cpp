// docs/rules.md rule 10 for the postgres source: the crash matrix's failpoints and random
// SIGKILLs, with the seeded workload's records in a table of another database read by
// `kind: postgres` (consistency: snapshot, cursor [seq]), must end where the independent
// oracle says one clean run ends. Short by default (one seed, first hit; two kills);
// TIDEMARK_LONG_TESTS=1 runs three seeds at first and later hits and more kills.
#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <string>

#include "tests/support/crash_harness.hpp"

namespace tidemark {
namespace {

using testing::CrashHarness;
using testing::long_tests_enabled;
using testing::WorkloadSize;
using testing::WorkloadSource;
using testing::oracle::transaction_entity;

std::uint64_t seed_count() { return long_tests_enabled() ? 3 : 1; }

TEST(PostgresSourceCrash, CleanRunMatchesTheOracleAndReplayChangesNothing) {
  CrashHarness harness(7, WorkloadSize{}, transaction_entity(), WorkloadSource::kPostgresTable);
  std::string error;
  harness.run_until_done("", 0, error);
  ASSERT_EQ(error, "");
  harness.relay_until_delivered("", 0, error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(harness.verify(), "");
  EXPECT_EQ(harness.replay_and_verify(), "");
  EXPECT_GT(harness.expected().totals[0], 0u);
  EXPECT_GT(harness.expected().totals[6], 0u) << "no invalid row in the workload";
}

class PostgresSourceCrash : public ::testing::TestWithParam<const char*> {};

TEST_P(PostgresSourceCrash, CrashAtAFailpointThenRestartEqualsTheOracle) {
  const std::string point = GetParam();
  for (std::uint64_t seed = 1; seed <= seed_count(); ++seed) {
    for (const bool first : {true, false}) {
      if (!first && !long_tests_enabled()) continue;
      CrashHarness harness(seed, WorkloadSize{}, transaction_entity(), WorkloadSource::kPostgresTable);
      std::mt19937_64 rng(seed);
      const std::uint64_t hits = harness.batches();
      const std::uint64_t hit = first || hits < 2 ? 1 : std::uniform_int_distribution<std::uint64_t>(2, hits)(rng);
      const std::string failpoint = point + ":" + std::to_string(hit);
      SCOPED_TRACE("seed " + std::to_string(seed) + ", TIDEMARK_FAILPOINTS=" + failpoint);
      std::string error;
      const int crashed = harness.run_until_done(failpoint, long_tests_enabled() ? 4 : 1, error);
      ASSERT_EQ(error, "");
      EXPECT_GE(crashed, 1) << "the failpoint never fired";
      harness.relay_until_delivered("", 0, error);
      ASSERT_EQ(error, "");
      EXPECT_EQ(harness.verify(), "");
      const auto tally = harness.tally();
      EXPECT_EQ(tally.lost_corrections, 0u);
      EXPECT_EQ(tally.duplicate_effects, 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Failpoints, PostgresSourceCrash, ::testing::Values("after_decode", "before_commit", "after_commit"),
                         [](const auto& info) { return std::string(info.param); });

TEST(PostgresSourceRandomKill, RunsKilledAtRandomInstantsEndEqualToTheOracle) {
  const int kills = long_tests_enabled() ? 12 : 3;
  std::uint64_t killed = 0;
  for (std::uint64_t seed = 301; seed < 301 + seed_count(); ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    CrashHarness harness(seed, WorkloadSize{600, 5, 5, 20}, transaction_entity(), WorkloadSource::kPostgresTable);
    std::mt19937_64 rng(seed);
    std::string error;
    killed += static_cast<std::uint64_t>(harness.kill_runs_until_done(kills, 400, rng, error));
    ASSERT_EQ(error, "");
    harness.relay_until_delivered("", 0, error);
    ASSERT_EQ(error, "");
    EXPECT_EQ(harness.verify(), "");
    EXPECT_EQ(harness.replay_and_verify(), "");
  }
  std::cout << "[figures] random kills postgres source: " << seed_count() << " seeds, " << killed
            << " external SIGKILLs survived" << std::endl;
}

}  // namespace
}  // namespace tidemark
