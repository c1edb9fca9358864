#include "pipeline/core/plan.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/built_in_record.hpp"

namespace tidemark::pipeline {
namespace {

using Stored = std::map<std::string, Record>;

Record make(std::string id, std::int64_t revision, std::int64_t cents,
            std::optional<std::string> account = std::nullopt, std::optional<std::int64_t> at = std::nullopt) {
  return Record{std::move(id), revision, Amount{cents}, std::move(account), at};
}

Validated invalid() { return Rejection{"amount: empty"}; }

// The built-in records as the planner takes every entity's: keys, revisions, canonical payloads.
std::vector<Checked> checked(const std::vector<Validated>& records) {
  std::vector<Checked> out;
  out.reserve(records.size());
  for (const Validated& record : records) {
    if (const auto* valid = std::get_if<Record>(&record)) {
      out.emplace_back(to_entity_record(*valid));
    } else {
      out.emplace_back(std::get<Rejection>(record));
    }
  }
  return out;
}

// What the commit step tells the planner about each staged version, written from the
// verdict contract in plan.hpp and the stored-row comparison of docs/cli.md "Outcomes".
std::vector<StoredVerdict> compare_with_stored(const BatchPlan& plan, const std::vector<Validated>& records,
                                               const Stored& stored) {
  std::vector<StoredVerdict> verdicts;
  for (const Version& version : plan.versions) {
    const Record& record = std::get<Record>(records[version.first_index]);
    const auto row = stored.find(record.transaction_id);
    if (row != stored.end() && row->second.source_revision == record.source_revision &&
        !row->second.same_payload(record)) {
      verdicts.push_back(Outcome::kConflict);
    } else if (!version.candidate) {
      verdicts.push_back(std::nullopt);
    } else if (row == stored.end()) {
      verdicts.push_back(Outcome::kInserted);
    } else if (row->second.source_revision < record.source_revision) {
      verdicts.push_back(Outcome::kUpdated);
    } else if (row->second.source_revision == record.source_revision) {
      verdicts.push_back(Outcome::kUnchanged);
    } else {
      verdicts.push_back(Outcome::kStale);
    }
  }
  return verdicts;
}

std::vector<Outcome> outcomes_of(const std::vector<Validated>& records, const Stored& stored = {}) {
  const BatchPlan plan = plan_batch(checked(records));
  return resolve_outcomes(plan, compare_with_stored(plan, records, stored));
}

// Straight from docs/cli.md "Outcomes": the first rule that applies, in precedence order; a
// revision is superseded only by a higher one that is itself neither invalid nor in conflict.
std::vector<Outcome> reference_outcomes(const std::vector<Validated>& records, const Stored& stored) {
  const auto in_conflict = [&](const Record& record) {
    const auto row = stored.find(record.transaction_id);
    if (row != stored.end() && row->second.source_revision == record.source_revision &&
        !row->second.same_payload(record)) {
      return true;
    }
    for (const Validated& validated : records) {
      const Record* other = std::get_if<Record>(&validated);
      if (other != nullptr && other->transaction_id == record.transaction_id &&
          other->source_revision == record.source_revision && !other->same_payload(record)) {
        return true;
      }
    }
    return false;
  };
  std::vector<Outcome> outcomes;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Record* record = std::get_if<Record>(&records[i]);
    if (record == nullptr) {
      outcomes.push_back(Outcome::kInvalid);
      continue;
    }
    bool duplicate = false;
    bool superseded = false;
    for (std::size_t j = 0; j < records.size(); ++j) {
      const Record* other = std::get_if<Record>(&records[j]);
      if (other == nullptr || other->transaction_id != record->transaction_id) continue;
      if (j < i && other->source_revision == record->source_revision && other->same_payload(*record)) {
        duplicate = true;
      }
      if (other->source_revision > record->source_revision && !in_conflict(*other)) superseded = true;
    }
    const auto row = stored.find(record->transaction_id);
    if (in_conflict(*record)) {
      outcomes.push_back(Outcome::kConflict);
    } else if (duplicate) {
      outcomes.push_back(Outcome::kDuplicate);
    } else if (superseded) {
      outcomes.push_back(Outcome::kSuperseded);
    } else if (row == stored.end()) {
      outcomes.push_back(Outcome::kInserted);
    } else if (row->second.source_revision < record->source_revision) {
      outcomes.push_back(Outcome::kUpdated);
    } else if (row->second.source_revision == record->source_revision) {
      outcomes.push_back(Outcome::kUnchanged);
    } else {
      outcomes.push_back(Outcome::kStale);
    }
  }
  return outcomes;
}

std::string names(const std::vector<Outcome>& outcomes) {
  std::string text;
  for (Outcome o : outcomes) text += std::string(to_string(o)) + " ";
  return text;
}

using O = Outcome;

TEST(PlanBatch, EmptyBatchHasNothingToDo) {
  const BatchPlan plan = plan_batch({});
  EXPECT_TRUE(plan.decided.empty());
  EXPECT_TRUE(plan.versions.empty());
  EXPECT_TRUE(resolve_outcomes(plan, {}).empty());
}

TEST(PlanBatch, EveryOutcomeInOneBatch) {
  const Stored stored = {{"upd", make("upd", 1, 100)},
                         {"same", make("same", 2, 200)},
                         {"old", make("old", 5, 300)},
                         {"clash", make("clash", 1, 400)}};
  const std::vector<Validated> records = {
      make("new", 1, 10),    // inserted
      make("upd", 2, 101),   // updated
      make("same", 2, 200),  // unchanged
      make("old", 4, 300),   // stale
      make("sup", 1, 1),     // superseded by the next
      make("sup", 2, 2),     // inserted
      make("new", 1, 10),    // duplicate of the first
      invalid(),             // invalid
      make("in", 1, 1),      // in-batch conflict with the next
      make("in", 1, 2),      // in-batch conflict
      make("clash", 1, 401)  // conflict with the stored row
  };
  EXPECT_EQ(outcomes_of(records, stored),
            (std::vector<Outcome>{O::kInserted, O::kUpdated, O::kUnchanged, O::kStale, O::kSuperseded, O::kInserted,
                                  O::kDuplicate, O::kInvalid, O::kConflict, O::kConflict, O::kConflict}));
}

TEST(PlanBatch, HighestOfSeveralRevisionsIsTheOnlyCandidate) {
  const std::vector<Validated> records = {make("k", 1, 1), make("k", 3, 3), make("k", 2, 2)};
  const BatchPlan plan = plan_batch(checked(records));
  ASSERT_EQ(plan.versions.size(), 3u);
  EXPECT_FALSE(plan.versions[0].candidate);
  EXPECT_TRUE(plan.versions[1].candidate);
  EXPECT_FALSE(plan.versions[2].candidate);
  EXPECT_EQ(plan.decided, (std::vector<std::optional<Outcome>>{O::kSuperseded, std::nullopt, O::kSuperseded}));
  // Superseded even though the stored row is newer than the lower revisions.
  EXPECT_EQ(outcomes_of(records, {{"k", make("k", 2, 2)}}),
            (std::vector<Outcome>{O::kSuperseded, O::kUpdated, O::kSuperseded}));
}

TEST(PlanBatch, ExactDuplicatesShareOneVersionAndOnlyTheFirstIsCompared) {
  const std::vector<Validated> records = {make("k", 1, 5, "a"), make("k", 1, 5, "a"), make("k", 1, 5, "a")};
  const BatchPlan plan = plan_batch(checked(records));
  ASSERT_EQ(plan.versions.size(), 1u);
  EXPECT_EQ(plan.versions[0].first_index, 0u);
  EXPECT_TRUE(plan.versions[0].candidate);
  for (const auto& version : plan.version_of) EXPECT_EQ(version, 0u);
  EXPECT_EQ(outcomes_of(records), (std::vector<Outcome>{O::kInserted, O::kDuplicate, O::kDuplicate}));
  EXPECT_EQ(outcomes_of(records, {{"k", make("k", 1, 5, "a")}}),
            (std::vector<Outcome>{O::kUnchanged, O::kDuplicate, O::kDuplicate}));
}

TEST(PlanBatch, EachPayloadFieldDistinguishesAVersion) {
  for (const Record& other : {make("k", 1, 6, "a", 7), make("k", 1, 5, "b", 7), make("k", 1, 5, std::nullopt, 7),
                              make("k", 1, 5, "a", 8), make("k", 1, 5, "a")}) {
    const std::vector<Validated> records = {make("k", 1, 5, "a", 7), other};
    EXPECT_EQ(outcomes_of(records), (std::vector<Outcome>{O::kConflict, O::kConflict}));
  }
}

TEST(PlanBatch, InBatchConflictCoversEveryRecordOfTheRevisionButNotAHigherOne) {
  const std::vector<Validated> records = {make("k", 1, 1),  make("k", 2, 20), make("k", 2, 20),
                                          make("k", 2, 21), make("k", 3, 30), make("k", 2, 20)};
  const BatchPlan plan = plan_batch(checked(records));
  EXPECT_EQ(plan.decided, (std::vector<std::optional<Outcome>>{O::kSuperseded, O::kConflict, O::kConflict,
                                                               O::kConflict, std::nullopt, O::kConflict}));
  // Conflicting records are not staged; the other revisions are.
  ASSERT_EQ(plan.versions.size(), 2u);
  EXPECT_EQ(plan.versions[0].first_index, 0u);
  EXPECT_FALSE(plan.versions[0].candidate);
  EXPECT_EQ(plan.versions[1].first_index, 4u);
  EXPECT_TRUE(plan.versions[1].candidate);
  for (std::size_t i : {1, 2, 3, 5}) EXPECT_FALSE(plan.version_of[i]);
  EXPECT_EQ(outcomes_of(records), (std::vector<Outcome>{O::kSuperseded, O::kConflict, O::kConflict, O::kConflict,
                                                        O::kInserted, O::kConflict}));
}

// Each in-batch conflict names a record it conflicts with: one of the same key and revision
// whose payload differs from its own, for the quarantine's detail.
TEST(PlanBatch, EachInBatchConflictNamesARecordWhosePayloadDiffersFromIt) {
  const std::vector<Validated> records = {make("k", 2, 20), make("j", 1, 1), make("k", 2, 20),
                                          make("k", 2, 21), make("k", 2, 22), make("j", 1, 1)};
  const std::vector<Checked> batch = checked(records);
  const BatchPlan plan = plan_batch(batch);
  EXPECT_EQ(plan.conflicts_with, (std::vector<std::optional<std::size_t>>{3, std::nullopt, 3, 0, 0, std::nullopt}));
  for (std::size_t i : {0, 2, 3, 4}) {
    const auto& here = std::get<EntityRecord>(batch[i]);
    const auto& there = std::get<EntityRecord>(batch[*plan.conflicts_with[i]]);
    EXPECT_FALSE(here.same_payload(there)) << "record " << i;
  }
}

TEST(DescribeDifferences, NamesEachDifferingFieldWithBothValuesAndAbsentOnes) {
  const EntityRecord here = to_entity_record(make("k", 2, 2050, "acc-1", 0));
  const EntityRecord there = to_entity_record(make("k", 2, 2050, std::nullopt, 1'000'000));
  EXPECT_EQ(describe_differences(built_in_transaction_entity(), here, there, "stored"),
            "account_id \"acc-1\" here, absent stored; occurred_at \"1970-01-01T00:00:00.000000Z\" here, "
            "\"1970-01-01T00:00:01.000000Z\" stored");
  EXPECT_EQ(describe_differences(built_in_transaction_entity(), here, here, "there"), "");
}

TEST(PlanBatch, ConflictAtTheHighestRevisionMakesTheNextRevisionTheCandidate) {
  // docs/cli.md "Outcomes"' example, nothing stored: T2,1,10.00  T2,2,20.00  T2,2,21.00.
  const std::vector<Validated> records = {make("T2", 1, 1000), make("T2", 2, 2000), make("T2", 2, 2100)};
  const BatchPlan plan = plan_batch(checked(records));
  ASSERT_EQ(plan.versions.size(), 1u);
  EXPECT_TRUE(plan.versions[0].candidate);
  EXPECT_EQ(outcomes_of(records), (std::vector<Outcome>{O::kInserted, O::kConflict, O::kConflict}));
}

TEST(PlanBatch, InvalidHigherRevisionDoesNotHideAValidOne) {
  // T1,1,10.00  T1,2,NaN: the invalid revision 2 neither supersedes nor blocks revision 1.
  const std::vector<Validated> records = {make("T1", 1, 1000), invalid()};
  EXPECT_EQ(outcomes_of(records), (std::vector<Outcome>{O::kInserted, O::kInvalid}));
}

TEST(PlanBatch, StoredConflictAppliesToEveryCopyIncludingSupersededOnes) {
  const Stored stored = {{"k", make("k", 1, 999)}};
  const std::vector<Validated> records = {make("k", 1, 1), make("k", 1, 1), make("k", 2, 2), make("k", 1, 1)};
  EXPECT_EQ(outcomes_of(records, stored),
            (std::vector<Outcome>{O::kConflict, O::kConflict, O::kUpdated, O::kConflict}));
}

TEST(PlanBatch, StoredConflictOnTheCandidateAppliesToEveryCopyAndTheRevisionBelowIsComparedWithTheStoredRow) {
  // Stored T at revision 2 with payload A; the batch T,1 + T,2 (payload B): stale, conflict.
  const Stored stored = {{"k", make("k", 2, 999)}};
  const std::vector<Validated> records = {make("k", 1, 1), make("k", 2, 2), make("k", 2, 2), make("k", 1, 1)};
  const BatchPlan plan = plan_batch(checked(records));
  ASSERT_EQ(plan.versions.size(), 2u);
  EXPECT_TRUE(plan.versions[1].candidate);
  EXPECT_EQ(plan.versions[1].next, 0u);
  EXPECT_EQ(outcomes_of(records, stored),
            (std::vector<Outcome>{O::kStale, O::kConflict, O::kConflict, O::kDuplicate}));
}

TEST(PlanBatch, DuplicateWinsOverSuperseded) {
  const std::vector<Validated> records = {make("k", 1, 1), make("k", 1, 1), make("k", 2, 2)};
  EXPECT_EQ(outcomes_of(records), (std::vector<Outcome>{O::kSuperseded, O::kDuplicate, O::kInserted}));
}

TEST(PlanBatch, InvalidRecordsInterleavedKeepTheirPlaceAndGetNoVersion) {
  const std::vector<Validated> records = {invalid(), make("a", 1, 1), invalid(), make("a", 1, 1), invalid(),
                                          make("b", 1, 1)};
  const BatchPlan plan = plan_batch(checked(records));
  for (std::size_t i : {0, 2, 4}) {
    EXPECT_EQ(plan.decided[i], O::kInvalid);
    EXPECT_FALSE(plan.version_of[i]);
  }
  ASSERT_EQ(plan.versions.size(), 2u);
  EXPECT_EQ(plan.versions[0].first_index, 1u);
  EXPECT_EQ(plan.versions[1].first_index, 5u);
  EXPECT_EQ(outcomes_of(records), (std::vector<Outcome>{O::kInvalid, O::kInserted, O::kInvalid, O::kDuplicate,
                                                        O::kInvalid, O::kInserted}));
}

TEST(PlanBatch, VersionsAppearInOrderOfFirstAppearance) {
  const std::vector<Validated> records = {make("b", 2, 1), make("a", 1, 1), make("b", 1, 1), make("a", 1, 1)};
  const BatchPlan plan = plan_batch(checked(records));
  ASSERT_EQ(plan.versions.size(), 3u);
  EXPECT_EQ(plan.versions[0].first_index, 0u);
  EXPECT_EQ(plan.versions[1].first_index, 1u);
  EXPECT_EQ(plan.versions[2].first_index, 2u);
  EXPECT_EQ(plan.version_of[3], 1u);
}

TEST(ResolveOutcomes, RefusesVerdictsThatBreakTheContract) {
  const std::vector<Validated> records = {make("k", 1, 1), make("k", 2, 2)};
  const BatchPlan plan = plan_batch(checked(records));
  // Wrong number of verdicts.
  EXPECT_THROW(resolve_outcomes(plan, {std::nullopt}), std::logic_error);
  // A candidate without a stored comparison.
  EXPECT_THROW(resolve_outcomes(plan, {std::nullopt, std::nullopt}), std::logic_error);
  // A candidate verdict that is not a stored comparison.
  EXPECT_THROW(resolve_outcomes(plan, {std::nullopt, O::kSuperseded}), std::logic_error);
  // A non-candidate verdict other than conflict.
  EXPECT_THROW(resolve_outcomes(plan, {O::kInserted, O::kInserted}), std::logic_error);
  EXPECT_EQ(resolve_outcomes(plan, {O::kConflict, O::kStale}), (std::vector<Outcome>{O::kConflict, O::kStale}));
}

TEST(PlanBatch, MatchesTheReferenceOnRandomBatches) {
  const std::uint32_t seed = 20240501;
  std::cout << "random seed " << seed << "\n";
  std::mt19937 random(seed);
  const auto pick = [&](int n) { return static_cast<int>(random() % static_cast<std::uint32_t>(n)); };
  const auto random_record = [&](int key) {
    // Few keys, revisions and payloads, so that every precedence rule applies often. Most
    // records carry their (key, revision)'s usual payload, so that conflicts do not swamp
    // the batch; every payload field sometimes differs.
    const int revision = pick(4);
    const int payload = pick(4) > 0 ? (key * 7 + revision) % 18 : pick(18);
    std::optional<std::string> account;
    if (payload % 3 > 0) account = "acc" + std::to_string(payload % 3);
    std::optional<std::int64_t> at;
    if (payload / 3 % 3 > 0) at = payload / 3 % 3;
    return make("k" + std::to_string(key), revision, payload / 9, account, at);
  };
  for (int round = 0; round < 3000; ++round) {
    Stored stored;
    for (int k = 0; k < 6; ++k) {
      if (pick(2) == 0) continue;
      Record row = random_record(k);
      stored.emplace(row.transaction_id, row);
    }
    std::vector<Validated> records;
    const int size = pick(30);
    for (int i = 0; i < size; ++i) {
      if (pick(10) == 0) {
        records.push_back(invalid());
      } else {
        records.push_back(random_record(pick(6)));
      }
    }
    const BatchPlan plan = plan_batch(checked(records));
    // Structural promises of plan.hpp.
    std::map<std::string, int> candidates;
    for (const Version& version : plan.versions) {
      if (version.candidate) ++candidates[std::get<Record>(records[version.first_index]).transaction_id];
    }
    for (const auto& [key, count] : candidates) ASSERT_EQ(count, 1) << key << " seed " << seed << " round " << round;

    const std::vector<Outcome> actual = resolve_outcomes(plan, compare_with_stored(plan, records, stored));
    const std::vector<Outcome> expected = reference_outcomes(records, stored);
    ASSERT_EQ(names(actual), names(expected)) << "seed " << seed << " round " << round;

    // The outcome of a valid record depends only on the valid, non-conflicting records of its
    // key and the stored row: without the rejected records, every other outcome is the same.
    std::vector<Validated> accepted;
    std::vector<Outcome> accepted_outcomes;
    for (std::size_t i = 0; i < records.size(); ++i) {
      if (actual[i] == O::kInvalid || actual[i] == O::kConflict) continue;
      accepted.push_back(records[i]);
      accepted_outcomes.push_back(actual[i]);
    }
    ASSERT_EQ(names(outcomes_of(accepted, stored)), names(accepted_outcomes)) << "seed " << seed << " round " << round;
  }
}

}  // namespace
}  // namespace tidemark::pipeline
