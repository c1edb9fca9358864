#pragma once
// The one interface the pipeline reads input through. Connectors implement it; the run
// controller never knows which connector it has.
#include <compare>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/core/record.hpp"

namespace tidemark::pipeline {

// A resume point: the file (relative to the source) and the byte offset where reading
// continues. Ordered so that a checkpoint can only move forward through a source read in
// lexical file order.
struct Checkpoint {
  std::string file;
  std::uint64_t offset = 0;

  std::string to_string() const;                                  // "file:offset"
  static std::optional<Checkpoint> parse(std::string_view text);  // inverse of to_string
  friend auto operator<=>(const Checkpoint&, const Checkpoint&) = default;
};

// Thrown when the source itself cannot be read (missing file, I/O error): the run fails.
// A record that cannot be decoded is not an error, it is an invalid DecodedRecord.
struct SourceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Source {
 public:
  virtual ~Source() = default;
  // A stable name of what is read (canonical path of the file or folder), the second half
  // of the checkpoint key (pipeline, source).
  virtual const std::string& identity() const = 0;
  // Continue reading just after `from` (files before from.file are skipped).
  virtual void seek(const Checkpoint& from) = 0;
  // Appends up to max_records records in source order to `out`, and fewer when their raw
  // bytes would pass max_bytes (never fewer than one); returns how many were appended, 0
  // only at the end of the source. Memory use is bounded by the records returned, never by
  // the size of the input.
  virtual std::size_t read(std::vector<DecodedRecord>& out, std::size_t max_records, std::size_t max_bytes) = 0;
  std::size_t read(std::vector<DecodedRecord>& out, std::size_t max_records) {
    return read(out, max_records, std::numeric_limits<std::size_t>::max());
  }
  // The resume point just past the last record returned by read().
  virtual Checkpoint position() const = 0;
  // Bytes at the end of the source left unread because they may still be being written (a
  // last line without its newline, not yet settled); the next run reads them.
  virtual std::uint64_t pending_tail_bytes() const { return 0; }
};

}  // namespace tidemark::pipeline
