#pragma once
// Re-driving a quarantined record (`tidemark quarantine release ID`): the raw record is
// decoded again by the connector that read it (through the RecordDecoder port), validated
// and sent through the same plan and commit path as a one-record batch; it may be accepted,
// or quarantined again with a new reason.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "pipeline/core/entity.hpp"
#include "pipeline/core/error.hpp"
#include "pipeline/core/record.hpp"
#include "pipeline/core/record_decoder.hpp"
#include "pipeline/store/pg/database.hpp"
#include "pipeline/store/pipeline_lock.hpp"

namespace tidemark::pipeline {

struct ReleaseResult {
  std::int64_t run_id = 0;
  Outcome outcome = Outcome::kInvalid;
};

// The entry holds a record of another entity than the one its pipeline loads now (the
// pipeline's `entity:` changed): validating it as that entity would load it into another
// table, so it is not released.
struct ReleaseEntityMismatch : tidemark::Error {
  explicit ReleaseEntityMismatch(const std::string& message)
      : tidemark::Error(tidemark::ErrorKind::kConflict, message) {}
};

// Another run holds the entry's pipeline, most often another release of the same entry that
// came first (409 in the API, exit 1 in the CLI): the entry is not released now. `run_id` is
// that run, 0 when it could not be told (the message then names the session that holds it).
struct ReleaseBusy : PipelineBusy {
  ReleaseBusy(const std::string& message, std::int64_t holder) : PipelineBusy(message), run_id(holder) {}
  std::int64_t run_id;
};

// A release takes the pipeline's lock and reads the entry again under it, so of concurrent
// releases of one entry one wins and the others are refused: ReleaseBusy while it runs, and
// a conflict (tidemark::Error of kind kConflict) naming its run once it has released the entry.
// Throws a conflict when the entry does not exist or was released already,
// db::PipelineEntityMismatch when the pipeline loads another entity than `entity` (recorded
// at its first run), ReleaseEntityMismatch when `entity` is not the entity the entry was
// quarantined as, and ReleaseBusy when another run holds the pipeline.
// The entry is read on one of `database`'s pooled connections (one attempt, as a command
// reports the first failure); the commit takes a session of its own, which holds the
// pipeline's lock, and retries by `retry`.
// `destinations` are those of the entry's pipeline (from the config; none without one).
// `decoder` decodes the entry's raw text by its stored format and decode_context, into the
// fields of `entity`, the entity of the entry's pipeline (from the config), whose table is
// brought up to date first and which validates the record again by its current declaration.
ReleaseResult release_quarantined(db::Database& database, std::int64_t id,
                                  const std::vector<std::string>& destinations, const std::string& released_by,
                                  const RecordDecoder& decoder, const db::RetryPolicy& retry = {},
                                  const EntityDeclaration& entity = built_in_transaction_entity());

// What `entity`'s table stores now for `key`, shown beside a quarantined record (`quarantine
// show`, GET /v1/quarantine/{id}). The statement is built from the declaration with quoted
// identifiers; the key travels as a parameter.
struct StoredRow {
  std::string table;
  // The row as a JSON object, {"<key>":…,"<revision>":…,"<field>":…} in table order, decimals
  // as strings at their scale; nullopt when no row (or no table) is stored.
  std::optional<std::string> json;
};
StoredRow stored_row(pqxx::transaction_base& txn, const EntityDeclaration& entity, const std::string& key);

}  // namespace tidemark::pipeline
