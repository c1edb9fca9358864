#pragma once
// The batch planner (docs/rules.md rules 2 and 4, docs/cli.md "Outcomes"): a pure function from the
// validated records of one batch to what the commit step must stage and upsert, and a pure
// resolution of every record's outcome once the stored rows have been compared.
#include <cstddef>
#include <optional>
#include <vector>

#include "pipeline/core/record.hpp"
#include "pipeline/core/validate.hpp"

namespace tidemark::pipeline {

// One distinct (key, revision, payload) of the batch that is not an
// in-batch conflict. Every such version is staged so that a same-revision conflict with a
// stored row is found for every record, not only for the one that would be upserted.
struct Version {
  std::size_t first_index = 0;  // index in the batch of the first record of this version
  // The highest revision of its key in the batch that is not an in-batch conflict: the one
  // to upsert.
  bool candidate = false;
  // Candidates only: the key's next version below, which becomes its candidate when this
  // one conflicts with the stored row (a rejected revision never hides a valid one).
  std::optional<std::size_t> next;
};

struct BatchPlan {
  // Per record: the outcome known without the database (kInvalid, kConflict for an
  // in-batch same-revision conflict, kSuperseded), or nullopt.
  std::vector<std::optional<Outcome>> decided;
  // Per record: index into `versions`, or nullopt for invalid and in-batch conflicts.
  std::vector<std::optional<std::size_t>> version_of;
  // Per in-batch conflict: the index of a record of the same key and revision whose payload
  // differs from it (the group's first, or the first that differs from that one); nullopt
  // for every other record.
  std::vector<std::optional<std::size_t>> conflicts_with;
  // In order of first appearance; one candidate per key that has a version.
  std::vector<Version> versions;
};

// Generic over the entity: keys, revisions and canonical payloads (EntityRecord) only.
BatchPlan plan_batch(const std::vector<Checked>& records);

// What the stored row says of one staged version (filled by the commit step):
// kConflict, or for candidates kInserted / kUpdated / kUnchanged / kStale; nullopt for a
// non-candidate without a stored conflict.
using StoredVerdict = std::optional<Outcome>;

// Every record's outcome, by the precedence of docs/cli.md "Outcomes": invalid, conflict, duplicate,
// superseded, then the stored comparison. stored.size() == plan.versions.size().
std::vector<Outcome> resolve_outcomes(const BatchPlan& plan, const std::vector<StoredVerdict>& stored);

}  // namespace tidemark::pipeline
