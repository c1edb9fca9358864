// docs/rules.md rule 10 as a standing proof: for every failpoint, seeded workloads are crashed at
// the failpoint's first and at a random later hit, restarted until done, and everything
// the processes left behind (state, outbox, quarantine, ledger, checkpoint, what the webhook
// receiver applied) must equal the independent oracle's prediction for one clean run.
// Every case runs on the built-in `transaction` entity and on a declared entity with every
// field type (oracle::every_type_entity()), through the same harness and oracle.
// Short by default; TIDEMARK_LONG_TESTS=1 runs 20 seeds and re-arms the failpoint on restarts.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <set>
#include <random>
#include <string>

#include "tests/support/crash_harness.hpp"

namespace tidemark {
namespace {

using testing::CrashHarness;
using testing::oracle::EntitySpec;
using testing::long_tests_enabled;
using testing::WorkloadSize;

std::vector<std::uint64_t> seeds() {
  std::vector<std::uint64_t> seeds;
  const std::uint64_t count = long_tests_enabled() ? 20 : 3;
  for (std::uint64_t seed = 1; seed <= count; ++seed) seeds.push_back(seed);
  return seeds;
}

WorkloadSize workload_size() { return long_tests_enabled() ? WorkloadSize{400, 5, 3, 25} : WorkloadSize{}; }

// Clean runs of seeded workloads of `entity` equal the oracle and reach all eight outcomes;
// for a declared entity, every field holds a value in some row and every column's rule is
// broken by some quarantined record.
void clean_runs_match_the_oracle(const EntitySpec& entity) {
  testing::oracle::Totals covered{};
  std::set<std::string> fields_at_fault;
  std::vector<bool> field_stored(entity.fields.size());
  for (const std::uint64_t seed : seeds()) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    CrashHarness harness(seed, workload_size(), entity);
    std::string error;
    harness.run_until_done("", 0, error);
    ASSERT_EQ(error, "") << "seed " << seed;
    harness.relay_until_delivered("", 0, error);
    ASSERT_EQ(error, "") << "seed " << seed;
    EXPECT_EQ(harness.verify(), "") << "seed " << seed;
    for (std::size_t i = 0; i < covered.size(); ++i) covered[i] += harness.expected().totals[i];
    for (const auto& entry : harness.expected().quarantine) fields_at_fault.insert(entry.field);
    for (const auto& [key, row] : harness.expected().state) {
      for (std::size_t i = 0; i < row.fields.size(); ++i) field_stored[i] = field_stored[i] || row.fields[i].has_value();
    }
  }
  for (std::size_t i = 0; i < covered.size(); ++i) {
    EXPECT_GT(covered[i], 0u) << "no workload produced a " << testing::oracle::kOutcomes[i] << " record";
    std::cout << testing::oracle::kOutcomes[i] << "=" << covered[i] << " ";
  }
  std::cout << std::endl;
  for (std::size_t i = 0; i < entity.fields.size(); ++i) {
    EXPECT_TRUE(field_stored[i]) << "no row holds a value of " << entity.fields[i].name;
  }
  if (entity.legacy) return;
  std::vector<std::string> columns = {entity.key, entity.revision};
  for (const auto& field : entity.fields) columns.push_back(field.name);
  for (const auto& column : columns) {
    EXPECT_TRUE(fields_at_fault.contains(column)) << "no invalid record named the field " << column;
  }
}

TEST(CrashMatrix, CleanRunOfWorkloadsCoveringEveryOutcomeMatchesTheOracle) {
  clean_runs_match_the_oracle(testing::oracle::transaction_entity());
}

TEST(CrashMatrix, CleanRunOfADeclaredEntityWithEveryFieldTypeMatchesTheOracle) {
  clean_runs_match_the_oracle(testing::oracle::every_type_entity());
}

// The comparison itself must see a lost correction, a changed field, a lost effect (and the
// gap it leaves in its stream's sequence), a lost quarantine entry and one whose field at
// fault is gone, or every green run above would prove nothing.
void tampered_database_is_reported(const EntitySpec& entity) {
  CrashHarness harness(1, workload_size(), entity);
  std::string error;
  harness.run_until_done("", 0, error);
  ASSERT_EQ(error, "");
  harness.relay_until_delivered("", 0, error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(harness.verify(), "");
  const auto& db = harness.database();
  const std::string table = "\"" + entity.table + "\"", key = "\"" + entity.key + "\"",
                    revision = "\"" + entity.revision + "\"";
  const auto decimal = std::find_if(entity.fields.begin(), entity.fields.end(),
                                    [](const auto& field) { return field.type == "decimal"; });
  ASSERT_NE(decimal, entity.fields.end());
  const std::string amount = "\"" + decimal->name + "\"";
  db.scalar("UPDATE " + table + " SET " + revision + " = " + revision + " - 1 WHERE " + key + " = (SELECT min(" + key +
            ") FROM " + table + " WHERE " + revision + " > 0)");
  db.scalar("UPDATE " + table + " SET " + amount + " = " + amount + " + 1 WHERE " + key + " = (SELECT max(" + key +
            ") FROM " + table + ")");
  db.scalar("DELETE FROM tidemark_change WHERE position = (SELECT min(position) FROM tidemark_change)");
  db.scalar("DELETE FROM quarantine WHERE id = (SELECT min(id) FROM quarantine)");
  db.scalar("UPDATE quarantine SET field = NULL WHERE id = (SELECT max(id) FROM quarantine WHERE field IS NOT NULL)");

  const std::string diff = harness.verify();
  EXPECT_NE(diff.find("state "), std::string::npos) << diff;
  EXPECT_NE(diff.find("outbox "), std::string::npos) << diff;
  EXPECT_NE(diff.find("sequences "), std::string::npos) << diff;
  EXPECT_NE(diff.find("quarantine missing"), std::string::npos) << diff;
  EXPECT_NE(diff.find("quarantine unexpected"), std::string::npos) << diff;
  // Two keys differ: the one rolled back and the one whose field changed.
  std::size_t state_lines = 0;
  for (std::size_t at = diff.find("state "); at != std::string::npos; at = diff.find("\nstate ", at + 1)) ++state_lines;
  EXPECT_EQ(state_lines, 2u) << diff;
  EXPECT_EQ(harness.tally().lost_corrections, 1u);
}

TEST(CrashMatrix, ComparisonReportsATamperedDatabase) {
  tampered_database_is_reported(testing::oracle::transaction_entity());
}

TEST(CrashMatrix, ComparisonReportsATamperedDeclaredEntity) {
  tampered_database_is_reported(testing::oracle::every_type_entity());
}

struct Point {
  const char* name;
  bool relay;  // the point is in the relay, not in the run
  const EntitySpec* entity = &testing::oracle::transaction_entity();
};

class CrashMatrix : public ::testing::TestWithParam<Point> {};

TEST_P(CrashMatrix, CrashAtFirstAndLaterHitThenRestartEqualsTheOracle) {
  const Point point = GetParam();
  const int armed_runs = long_tests_enabled() ? 4 : 1;
  std::uint64_t cases = 0, crashes = 0, records = 0, lost = 0, duplicates = 0;
  for (const std::uint64_t seed : seeds()) {
    for (const bool first : {true, false}) {
      CrashHarness harness(seed, workload_size(), *point.entity);
      // The later hit is drawn from the seed, among the hits one clean run makes.
      const std::uint64_t hits = point.relay ? harness.expected().outbox_keys.size() : harness.batches();
      std::mt19937_64 rng(seed);
      const std::uint64_t hit = first || hits < 2 ? 1 : std::uniform_int_distribution<std::uint64_t>(2, hits)(rng);
      const std::string failpoint = std::string(point.name) + ":" + std::to_string(hit);
      SCOPED_TRACE("seed " + std::to_string(seed) + ", TIDEMARK_FAILPOINTS=" + failpoint);

      std::string error;
      int crashed = harness.run_until_done(point.relay ? "" : failpoint, armed_runs, error);
      ASSERT_EQ(error, "");
      crashed += harness.relay_until_delivered(point.relay ? failpoint : "", armed_runs, error);
      ASSERT_EQ(error, "");
      EXPECT_GE(crashed, 1) << "the failpoint never fired";
      const std::string diff = harness.verify();
      EXPECT_EQ(diff, "") << "seed " << seed << ", " << failpoint;
      const auto tally = harness.tally();
      ++cases;
      crashes += static_cast<std::uint64_t>(crashed);
      records += harness.records();
      lost += tally.lost_corrections;
      duplicates += tally.duplicate_effects;
    }
  }
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(duplicates, 0u);
  std::cout << "[figures] crash matrix " << point.entity->name << " " << point.name << ": " << cases << " cases (" << seeds().size()
            << " seeds x 2 hits), " << crashes << " crashes, " << records << " records checked, " << lost
            << " lost corrections, " << duplicates << " duplicate effects" << std::endl;
}

INSTANTIATE_TEST_SUITE_P(Failpoints, CrashMatrix,
                         ::testing::Values(Point{"after_decode", false}, Point{"before_commit", false},
                                           Point{"after_commit", false}, Point{"relay_after_send", true},
                                           Point{"relay_after_mark", true}),
                         [](const auto& info) { return std::string(info.param.name); });

// The commit path on the declared entity: its generated apply statement, stage and table. The
// relay's points are not repeated: payloads are opaque to it, and every case here still
// delivers the entity's outbox and checks the receiver applied each event once.
const EntitySpec* const kEveryType = &testing::oracle::every_type_entity();
INSTANTIATE_TEST_SUITE_P(EntityFailpoints, CrashMatrix,
                         ::testing::Values(Point{"after_decode", false, kEveryType},
                                           Point{"before_commit", false, kEveryType},
                                           Point{"after_commit", false, kEveryType}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tidemark
