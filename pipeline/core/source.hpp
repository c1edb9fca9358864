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

#include "pipeline/core/error.hpp"
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

// What a source that reads files has read of one of them (docs/sources.md "Files that
// change"): stored in the transaction of the batch that read it, handed back to the source
// before it seeks at the next run, so that it can tell a file that only grew (read on from
// `bytes`) from one whose content up to there changed (read again from its start).
struct FileMark {
  std::string file;          // its name in the source's folder, escaped into valid text
  std::uint64_t bytes = 0;   // every record before this offset was returned
  std::uint64_t device = 0;  // of the file that was read
  std::uint64_t inode = 0;
  std::string fingerprint;   // hex SHA-256 of its first KiB and its KiB before `bytes`; '' when unknown
  friend bool operator==(const FileMark&, const FileMark&) = default;
};

// A file a run reads again from its start because what an earlier run read of it changed.
struct ChangedFile {
  std::string file;    // as in FileMark
  std::string change;  // what changed, for the log and the run's summary
};

// Thrown when the source itself cannot be read (missing file, I/O error): the run fails.
// A record that cannot be decoded is not an error, it is an invalid DecodedRecord.
struct SourceError : tidemark::Error {
  explicit SourceError(const std::string& message) : tidemark::Error(tidemark::ErrorKind::kPermanent, message) {}
};

// Thrown by a partition of a partitioned source that will not read on from its checkpoint
// (its stream lost messages after it, or is not the stream the checkpoint was written for):
// serve counts it per partition.
struct PartitionRefused : SourceError {
  using SourceError::SourceError;
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

  // Sources that read files keep a registry of what they read of each (FileMark); the others
  // keep nothing. `stored` is what the batches of earlier runs recorded, given before seek();
  // a replay does not give it (it reads every file from its start).
  virtual void restore_marks(std::vector<FileMark> stored) { (void)stored; }
  // The marks that changed since the last call, for the batch of the records read since
  // then: its transaction stores them. Called on the reading thread, after read().
  virtual std::vector<FileMark> take_marks() { return {}; }
  // The names of the files the source found in this run, for the registry's retention.
  virtual std::vector<std::string> seen_files() const { return {}; }
  // The files this run reads again from their start, known after seek().
  virtual std::vector<ChangedFile> changed_files() const { return {}; }
};

// Asks a partitioned source whether a partition has anything to load after its checkpoint,
// so that a consumer starts no run of an idle partition; keeps its connection to the source
// between questions. Not thread-safe: one consumer asks.
class PartitionWatcher {
 public:
  virtual ~PartitionWatcher() = default;
  // True when the partition holds a record after `checkpoint` (empty: nothing loaded yet), or
  // when a run should start to say why it cannot (the partition is missing or not the one
  // the checkpoint names). Throws when the source cannot answer.
  virtual bool has_work(int partition, std::string_view checkpoint) = 0;
};

}  // namespace tidemark::pipeline
