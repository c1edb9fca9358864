#pragma once
// The commit step, the only writer during a batch (DESIGN "Shape"): one transaction per
// batch that stages the planned versions, compares them with the stored rows, upserts,
// writes outbox rows, quarantine entries, the ledger row and the checkpoint.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "pipeline/store/pg/database.hpp"
#include "pipeline/core/plan.hpp"
#include "pipeline/core/record.hpp"
#include "pipeline/core/source.hpp"

namespace tidemark::pipeline {

// One batch as the commit step needs it: what was read, what the validator and planner
// made of it, and where it starts and ends in the source.
struct BatchInput {
  const std::vector<DecodedRecord>& decoded;
  const std::vector<Validated>& validated;
  const BatchPlan& plan;
  int batch_no = 0;
  std::string start_position;
  // The checkpoint to advance to; nullopt for a batch that is not read from the source
  // (a quarantine release), which leaves the checkpoint alone.
  std::optional<Checkpoint> end;
  // A quarantine entry this batch re-drives: marked released, with the outcome, in the
  // batch's own transaction.
  std::optional<std::int64_t> releases_quarantine_id;
  std::string released_by;
  // Called with the batch's outcomes before it commits; an exception thrown from it rolls
  // the batch back and ends the commit (a run's rejection threshold).
  std::function<void(const OutcomeCounts&)> admit;
};

struct BatchResult {
  OutcomeCounts counts;
  std::vector<Outcome> outcomes;  // per record; empty when recovered by read-back
  std::uint64_t outbox_rows = 0;
  bool recovered = false;  // the commit's outcome was unknown and read back from the ledger
};

// Where quarantined records came from, so that a release can decode them again.
struct QuarantineOrigin {
  std::string format;  // "csv" or "jsonl"
  // The header line of a CSV source file (by SourcePosition::file); unset for JSON Lines.
  std::function<std::optional<std::string>(const std::string& file)> csv_header;
};

// Another process holds the pipeline; the message says which.
struct PipelineBusy : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Committer {
 public:
  Committer(std::string url, std::string pipeline, std::string source, std::vector<std::string> destinations,
            db::RetryPolicy retry = {});
  ~Committer();  // releases the pipeline's lock
  Committer(const Committer&) = delete;
  Committer& operator=(const Committer&) = delete;

  // Commits one batch, retrying transient failures; each attempt after the first reads
  // back the ledger first, so a batch whose COMMIT was lost in transit is not redone.
  BatchResult commit(const BatchInput& batch, const QuarantineOrigin& origin, std::int64_t run_id);

  // (Re)connects when needed, taking the pipeline's lock (PipelineBusy when held).
  pqxx::connection& connection();

 private:
  BatchResult attempt(const BatchInput& batch, const QuarantineOrigin& origin, std::int64_t run_id);
  std::optional<BatchResult> read_back(std::int64_t run_id, int batch_no);

  std::string url_;
  std::string pipeline_;
  std::string source_;
  std::string destinations_literal_;  // '{a,b}' for $2::text[]
  db::RetryPolicy retry_;
  std::unique_ptr<pqxx::connection> connection_;
};

// A name of any bytes (a file name, a source path, a header row) as valid text, reversibly:
// a backslash becomes "\\", a NUL or a byte that is not part of valid UTF-8 "\xNN" (two
// lowercase hex digits). Valid UTF-8 without backslashes is unchanged.
std::string escape_bytes(std::string_view bytes);
// The inverse of escape_bytes. A backslash that starts neither escape is kept as is.
std::string unescape_bytes(std::string_view text);
// A checkpoint as stored and shown (checkpoint table, batch ledger, run summary): its file
// name escaped, "file:offset".
std::string stored_position(const Checkpoint& checkpoint);
std::optional<Checkpoint> parse_stored_position(std::string_view text);

}  // namespace tidemark::pipeline
