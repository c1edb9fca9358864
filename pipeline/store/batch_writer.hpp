#pragma once
// The statements of one batch's commit, in a transaction the committer gives them
// (docs/architecture.md "A batch, step by step"): the stage's COPY, the entity's apply
// statement and the outcomes, then the quarantine, the ledger row, the files read and the
// checkpoint. Which transaction, on which session, how often: the committer's.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "pipeline/core/entity.hpp"
#include "pipeline/core/plan.hpp"
#include "pipeline/core/record.hpp"
#include "pipeline/core/source.hpp"

namespace tidemark::pipeline {

struct BatchInput;
struct BatchResult;
struct QuarantineOrigin;

// The source's order of positions (Source::precedes): whether `later` lies after `earlier`.
using PositionOrder = std::function<bool(const Position& earlier, const Position& later)>;

class BatchWriter {
 public:
  BatchWriter(std::string pipeline, std::string source, const std::vector<std::string>& destinations,
              PositionOrder precedes, const EntityDeclaration& entity);

  // The entity's stage table DDL, for each session.
  const std::string& create_stage() const { return create_stage_; }

  // 1. COPYs the batch's versions into the session's stage.
  void stage(pqxx::transaction_base& txn, const BatchInput& batch) const;
  // 2. Compares, upserts, sequences and logs the changes in one statement, and resolves
  // every record's outcome. `stored_rows` gets, per version in conflict with the stored row,
  // that row (for the quarantine's detail).
  BatchResult apply(pqxx::transaction_base& txn, const BatchInput& batch,
                    std::vector<std::optional<EntityRecord>>& stored_rows) const;
  // Empties the stage, as COMMIT does: a dry run's batches share one transaction.
  void empty_stage(pqxx::transaction_base& txn) const;
  // 3. and 4.: the released entry, the quarantine, the ledger row, the files read, the
  // checkpoint (never backwards) and the relays' wake-up; everything but the COMMIT.
  void record(pqxx::transaction_base& txn, const BatchInput& batch, const QuarantineOrigin& origin,
              std::int64_t run_id, const BatchResult& result,
              const std::vector<std::optional<EntityRecord>>& stored_rows) const;
  // The registry of files read: what the batch (or the run's end) read of each file.
  void record_marks(pqxx::transaction_base& txn, const std::vector<FileMark>& marks, std::int64_t run_id) const;
  // The files a run found, for the registry's retention.
  void record_seen(pqxx::transaction_base& txn, const std::vector<std::string>& seen) const;

 private:
  void quarantine(pqxx::transaction_base& txn, const BatchInput& batch, const QuarantineOrigin& origin,
                  std::int64_t run_id, const BatchResult& result,
                  const std::vector<std::optional<EntityRecord>>& stored_rows) const;
  // The stored row the apply statement returns beside a conflict verdict, its value columns
  // from `first_value` on (they have no names: one per declared field).
  EntityRecord stored_row(const pqxx::row& row, pqxx::row::size_type first_value) const;
  // A conflicting record's detail: what it conflicts with (the other record's position, or
  // the stored row) and each field that differs, with both values.
  std::string conflict_detail(const BatchInput& batch, const std::vector<std::optional<EntityRecord>>& stored_rows,
                              std::size_t index) const;

  std::string pipeline_;
  std::string source_;
  std::string destinations_literal_;  // '{a,b}' for $2::text[]
  PositionOrder precedes_;
  EntityDeclaration entity_;
  // The stage, its COPY columns, its DDL and the batch's one apply statement for entity_.
  std::string stage_table_;
  std::vector<std::string> stage_columns_;
  std::string create_stage_;
  std::string apply_batch_;
};

}  // namespace tidemark::pipeline
