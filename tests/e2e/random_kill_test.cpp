// Crashes not only at failpoints: `tidemark run` and `tidemark relay --once` are SIGKILLed
// from outside at random instants, restarted, killed again, and finally left to finish; the
// result must equal the independent oracle's prediction for one clean run. Then a --replay
// of the whole source must change nothing but the ledger. On the built-in entity and on a
// declared entity with every field type. Short by default; TIDEMARK_LONG_TESTS=1 runs 20
// seeds (5 on the declared entity, 2 by default) with many more kills.
#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <string>

#include "tests/support/crash_harness.hpp"
#include "tests/support/process.hpp"

namespace tidemark {
namespace {

using testing::CrashHarness;
using testing::long_tests_enabled;
using testing::WorkloadSize;
using testing::oracle::EntitySpec;

void killed_at_random_instants_end_equal_to_the_oracle(const EntitySpec& entity, std::uint64_t first_seed,
                                                       std::uint64_t seeds) {
  const bool long_run = long_tests_enabled();
  const int kills = long_run ? 12 : 4;
  std::uint64_t killed = 0, records = 0, lost = 0, duplicates = 0;
  for (std::uint64_t seed = first_seed; seed < first_seed + seeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    CrashHarness harness(seed, WorkloadSize{long_run ? 1500u : 600u, 5, 5, 20}, entity);
    std::mt19937_64 rng(seed);
    std::string error;
    killed += static_cast<std::uint64_t>(harness.kill_runs_until_done(kills, 400, rng, error));
    ASSERT_EQ(error, "") << "seed " << seed;
    killed += static_cast<std::uint64_t>(harness.kill_relays_until_delivered(kills, 300, rng, error));
    ASSERT_EQ(error, "") << "seed " << seed;
    EXPECT_EQ(harness.verify(), "") << "seed " << seed;
    EXPECT_EQ(harness.replay_and_verify(), "") << "seed " << seed;
    const auto tally = harness.tally();
    records += harness.records();
    lost += tally.lost_corrections;
    duplicates += tally.duplicate_effects;
  }
  EXPECT_GT(killed, 0u) << "no kill landed while a process was running";
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(duplicates, 0u);
  std::cout << "[figures] random kills " << entity.name << ": " << seeds << " seeds, " << killed
            << " external SIGKILLs survived, " << records << " records checked, " << lost << " lost corrections, "
            << duplicates << " duplicate effects" << std::endl;
}

TEST(RandomKill, RunsAndRelaysKilledAtRandomInstantsEndEqualToTheOracle) {
  killed_at_random_instants_end_equal_to_the_oracle(testing::oracle::transaction_entity(), 101,
                                                    long_tests_enabled() ? 20 : 2);
}

TEST(RandomKill, RunsAndRelaysOfADeclaredEntityKilledAtRandomInstantsEndEqualToTheOracle) {
  killed_at_random_instants_end_equal_to_the_oracle(testing::oracle::every_type_entity(), 201,
                                                    long_tests_enabled() ? 5 : 2);
}

}  // namespace
}  // namespace tidemark
