#pragma once
// Re-driving a quarantined record (`tidemark quarantine release ID`): the raw record is
// decoded and validated again and sent through the same plan and commit path as a
// one-record batch; it may be accepted, or quarantined again with a new reason.
#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/store/pg/database.hpp"
#include "pipeline/core/record.hpp"

namespace tidemark::pipeline {

struct ReleaseResult {
  std::int64_t run_id = 0;
  Outcome outcome = Outcome::kInvalid;
};

// Throws std::invalid_argument when the entry does not exist or was released already.
// `destinations` are those of the entry's pipeline (from the config; none without one).
ReleaseResult release_quarantined(const std::string& database_url, std::int64_t id,
                                  const std::vector<std::string>& destinations, const std::string& released_by,
                                  const db::RetryPolicy& retry = {});

}  // namespace tidemark::pipeline
