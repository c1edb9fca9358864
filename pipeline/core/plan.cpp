#include "pipeline/core/plan.hpp"

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tidemark::pipeline {

namespace {

// All records of one (key, revision) in the batch.
struct RevisionGroup {
  std::size_t first_index = 0;
  std::size_t key = 0;  // index into the per-key candidates
  std::int64_t revision = 0;
  bool conflict = false;  // two records of the group carry different payloads
  std::size_t first_differing = 0;  // when conflict: the first record that differs from the first
  std::optional<std::size_t> version;
};

// Per key: the group of its highest revision that is neither invalid nor an in-batch
// conflict (the candidate), and the next one below it (the candidate instead when the
// first conflicts with the stored row).
struct KeyCandidates {
  std::optional<std::size_t> highest;
  std::optional<std::size_t> next;
};

struct RevisionGroupKey {
  std::size_t key = 0;
  std::int64_t revision = 0;
  friend bool operator==(const RevisionGroupKey&, const RevisionGroupKey&) = default;
};

struct RevisionGroupKeyHash {
  std::size_t operator()(const RevisionGroupKey& k) const noexcept {
    return std::hash<std::size_t>{}(k.key) * 0x9E3779B97F4A7C15ull ^ std::hash<std::int64_t>{}(k.revision);
  }
};

bool is_stored_comparison(Outcome outcome) {
  return outcome == Outcome::kInserted || outcome == Outcome::kUpdated || outcome == Outcome::kUnchanged ||
         outcome == Outcome::kStale;
}

}  // namespace

BatchPlan plan_batch(const std::vector<Checked>& records) {
  const std::size_t n = records.size();
  BatchPlan plan;
  plan.decided.assign(n, std::nullopt);
  plan.version_of.assign(n, std::nullopt);
  plan.conflicts_with.assign(n, std::nullopt);

  // Keys are views into `records`, which outlive this function's maps.
  std::unordered_map<std::string_view, std::size_t> key_index;
  std::unordered_map<RevisionGroupKey, std::size_t, RevisionGroupKeyHash> group_index;
  key_index.reserve(n);
  group_index.reserve(n);
  std::vector<KeyCandidates> keys;
  std::vector<RevisionGroup> groups;
  std::vector<std::size_t> group_of(n);

  // Pass 1: group by key and revision; a group is a conflict as soon as one record's
  // payload differs from the group's first.
  for (std::size_t i = 0; i < n; ++i) {
    const EntityRecord* record = std::get_if<EntityRecord>(&records[i]);
    if (record == nullptr) {
      plan.decided[i] = Outcome::kInvalid;
      continue;
    }
    const auto [key_it, new_key] = key_index.try_emplace(record->key, keys.size());
    if (new_key) keys.emplace_back();
    const auto [group_it, new_group] =
        group_index.try_emplace(RevisionGroupKey{key_it->second, record->revision}, groups.size());
    if (new_group) {
      groups.push_back(RevisionGroup{i, key_it->second, record->revision, false, 0, std::nullopt});
    } else {
      RevisionGroup& group = groups[group_it->second];
      if (!group.conflict && !record->same_payload(std::get<EntityRecord>(records[group.first_index]))) {
        group.conflict = true;
        group.first_differing = i;
      }
    }
    group_of[i] = group_it->second;
  }

  // Each key's two highest revisions that are not in conflict: a rejected revision never
  // hides a valid one (docs/cli.md "Outcomes").
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].conflict) continue;
    KeyCandidates& key = keys[groups[g].key];
    const auto above = [&](const std::optional<std::size_t>& other) {
      return !other || groups[g].revision > groups[*other].revision;
    };
    if (above(key.highest)) {
      key.next = key.highest;
      key.highest = g;
    } else if (above(key.next)) {
      key.next = g;
    }
  }

  // Pass 2, in batch order so versions appear in order of first appearance.
  for (std::size_t i = 0; i < n; ++i) {
    if (plan.decided[i]) continue;  // invalid
    RevisionGroup& group = groups[group_of[i]];
    if (group.conflict) {
      plan.decided[i] = Outcome::kConflict;
      // What it conflicts with: the group's first record, unless it has that one's payload.
      const bool like_first = i == group.first_index || std::get<EntityRecord>(records[i]).same_payload(
                                                             std::get<EntityRecord>(records[group.first_index]));
      plan.conflicts_with[i] = like_first ? group.first_differing : group.first_index;
      continue;
    }
    const bool highest = keys[group.key].highest == group_of[i];
    if (!group.version) {
      group.version = plan.versions.size();
      plan.versions.push_back(Version{group.first_index, highest});
    }
    plan.version_of[i] = group.version;
    if (!highest) plan.decided[i] = Outcome::kSuperseded;
  }
  for (const KeyCandidates& key : keys) {
    if (key.highest && key.next) plan.versions[*groups[*key.highest].version].next = groups[*key.next].version;
  }
  return plan;
}

std::vector<Outcome> resolve_outcomes(const BatchPlan& plan, const std::vector<StoredVerdict>& stored) {
  if (stored.size() != plan.versions.size()) {
    throw std::logic_error("resolve_outcomes: " + std::to_string(stored.size()) + " stored verdicts for " +
                           std::to_string(plan.versions.size()) + " versions");
  }
  for (std::size_t v = 0; v < stored.size(); ++v) {
    const StoredVerdict& verdict = stored[v];
    const bool valid = plan.versions[v].candidate
                           ? verdict && (*verdict == Outcome::kConflict || is_stored_comparison(*verdict))
                           : !verdict || *verdict == Outcome::kConflict;
    if (!valid) {
      throw std::logic_error("resolve_outcomes: version " + std::to_string(v) + " (candidate " +
                             (plan.versions[v].candidate ? "yes" : "no") + ") has stored verdict " +
                             (verdict ? std::string(to_string(*verdict)) : std::string("none")));
    }
  }

  // A candidate in conflict with the stored row hands its key to the next revision below
  // it, which trails the stored revision (equal to the candidate's): that one is stale.
  std::vector<bool> stale_instead(plan.versions.size(), false);
  for (std::size_t v = 0; v < stored.size(); ++v) {
    if (plan.versions[v].candidate && stored[v] == Outcome::kConflict && plan.versions[v].next) {
      stale_instead[*plan.versions[v].next] = true;
    }
  }

  std::vector<Outcome> outcomes(plan.decided.size());
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const std::optional<std::size_t> version = plan.version_of[i];
    if (!version) {
      // Invalid, or an in-batch conflict: decided without the database.
      if (!plan.decided[i]) throw std::logic_error("resolve_outcomes: record without version or outcome");
      outcomes[i] = *plan.decided[i];
    } else if (stored[*version] == Outcome::kConflict) {
      outcomes[i] = Outcome::kConflict;  // conflict wins over duplicate and superseded
    } else if (plan.versions[*version].first_index != i) {
      outcomes[i] = Outcome::kDuplicate;  // duplicate wins over superseded
    } else if (stale_instead[*version]) {
      outcomes[i] = Outcome::kStale;
    } else if (plan.decided[i]) {
      outcomes[i] = *plan.decided[i];
    } else {
      outcomes[i] = *stored[*version];
    }
  }
  return outcomes;
}

}  // namespace tidemark::pipeline
