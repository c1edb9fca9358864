#pragma once
// The one interface the pipeline reads input through. Connectors implement it; the run
// controller never knows which connector it has.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/core/record.hpp"

namespace tidemark::pipeline {

// A resume point, opaque to the pipeline: only the Source that produced it knows what it
// names (a file and a byte offset, a stream sequence, ...). Its text is what the checkpoint
// table, the batch ledger and a run's summary store and show, so it is valid UTF-8; the
// Source parses it back (seek) and orders two of them (precedes). The empty text, a
// default Position, is the start of any source.
struct Position {
  std::string text;
  friend bool operator==(const Position&, const Position&) = default;
};

// A position as stored and shown.
inline const std::string& stored_position(const Position& position) { return position.text; }

// Thrown when the source itself cannot be read (missing file, I/O error): the run fails.
// A record that cannot be decoded is not an error, it is an invalid DecodedRecord.
struct SourceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Source {
 public:
  virtual ~Source() = default;
  // A stable name of what is read, the second half of the checkpoint key (pipeline, source);
  // valid UTF-8, as stored and logged.
  virtual const std::string& identity() const = 0;
  // Continue reading just after `from`, a position this kind of source produced (stored by
  // an earlier run). Throws SourceError when `from` is not one of its positions.
  virtual void seek(const Position& from) = 0;
  // Appends up to max_records records in source order to `out`, and fewer when their raw
  // bytes would pass max_bytes (never fewer than one); returns how many were appended, 0
  // only at the end of the source. Memory use is bounded by the records returned, never by
  // the size of the input.
  virtual std::size_t read(std::vector<DecodedRecord>& out, std::size_t max_records, std::size_t max_bytes) = 0;
  std::size_t read(std::vector<DecodedRecord>& out, std::size_t max_records) {
    return read(out, max_records, std::numeric_limits<std::size_t>::max());
  }
  // The resume point just past the last record returned by read().
  virtual Position position() const = 0;
  // Whether `later` lies after `earlier` in this source's reading order: a checkpoint only
  // ever moves forward (a replay re-reads from the start without undoing progress). Depends
  // only on the two positions, not on what has been read: the commit step asks while the
  // source reads ahead on another thread. Throws SourceError for a position it cannot read.
  virtual bool precedes(const Position& earlier, const Position& later) const = 0;
  // The name of the format the records are written in, stored with a quarantined record so
  // that a RecordDecoder can decode its raw text again.
  virtual std::string_view format() const = 0;
  // Bytes at the end of the source left unread because they may still be being written (a
  // last line without its newline, not yet settled); the next run reads them.
  virtual std::uint64_t pending_tail_bytes() const { return 0; }
};

}  // namespace tidemark::pipeline
