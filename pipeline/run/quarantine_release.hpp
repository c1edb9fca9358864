#pragma once
// Re-driving a quarantined record (`tidemark quarantine release ID`): the raw record is
// decoded again by the connector that read it (through the RecordDecoder port), validated
// and sent through the same plan and commit path as a one-record batch; it may be accepted,
// or quarantined again with a new reason.
#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/core/entity.hpp"
#include "pipeline/core/record.hpp"
#include "pipeline/core/record_decoder.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::pipeline {

struct ReleaseResult {
  std::int64_t run_id = 0;
  Outcome outcome = Outcome::kInvalid;
};

// Throws std::invalid_argument when the entry does not exist or was released already.
// `destinations` are those of the entry's pipeline (from the config; none without one).
// `decoder` decodes the entry's raw text by its stored format and decode_context, into the
// fields of `entity`, the entity of the entry's pipeline (from the config), whose table is
// brought up to date first and which validates the record again by its current declaration.
ReleaseResult release_quarantined(const std::string& database_url, std::int64_t id,
                                  const std::vector<std::string>& destinations, const std::string& released_by,
                                  const RecordDecoder& decoder, const db::RetryPolicy& retry = {},
                                  const EntityDeclaration& entity = built_in_transaction_entity());

}  // namespace tidemark::pipeline
