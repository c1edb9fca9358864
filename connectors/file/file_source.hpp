#pragma once
// The file connector: a CSV or JSON Lines file, or a folder of them read in lexical order.
#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <string>
#include <vector>

#include "connectors/file/change_policy.hpp"
#include "connectors/file/file_position.hpp"
#include "connectors/file/format.hpp"
#include "connectors/file/options.hpp"
#include "connectors/file/read_only_file.hpp"
#include "connectors/file/record_stream.hpp"
#include "pipeline/core/source.hpp"

namespace tidemark::connectors::file {

// A file whose first this many records all fail to decode is not in the configured format
// (looked at up to kFormatProbeBytes of their raw bytes, which bounds the look-ahead).
inline constexpr std::size_t kFormatProbeRecords = 100;
inline constexpr std::size_t kFormatProbeBytes = kMaxRecordBytes;

// Reads in fixed-size chunks, so memory is bounded by the records returned. Positions are
// FilePositions: a file by its name inside the folder (a single file by its own name) and
// the byte offset just past the last record returned. The identity is the canonical path,
// escaped into valid text.
//
// Unusable input fails fast: a CSV file whose header is broken or lacks a required column,
// or a file whose first kFormatProbeRecords records all fail to decode, throws
// pipeline::SourceError before any record of that file is returned (records of earlier files
// are returned first; the error comes with the next read).
//
// The registry of files read (restore_marks, take_marks): given what earlier runs read of each
// file, seek() reads on from there a file that only grew, skips one read whole, and reads again
// from its start one whose content up to there changed (changed_files; or fails there, under
// ChangePolicy::kFail). Without a registry (a pipeline's runs from before it) seek() resumes at
// the position as before, and the first batch registers what that position had passed.
// The files a FileSource reads in `folder`: its direct child regular files whose extension
// matches `format`, in no particular order. Sets `ec` when the folder cannot be listed.
std::vector<std::filesystem::path> folder_files(const std::filesystem::path& folder, Format format,
                                                std::error_code& ec);

class FileSource final : public pipeline::Source {
 public:
  // A folder yields its direct child regular files whose extension matches `format`; a
  // single file is read whatever its extension. Throws pipeline::SourceError when `path`
  // does not exist or the folder cannot be listed.
  // `layout` names the fields its records deliver (the entity's, record_layout).
  FileSource(const std::filesystem::path& path, Format format, std::size_t chunk_bytes = kDefaultChunkBytes,
             std::chrono::milliseconds settle = kDefaultSettle, LayoutPtr layout = built_in_layout(),
             ChangePolicy on_change = ChangePolicy::kReread);

  const std::string& identity() const override { return identity_; }
  void seek(const pipeline::Position& from) override;
  void seek(const FilePosition& from);
  using pipeline::Source::read;
  std::size_t read(std::vector<pipeline::DecodedRecord>& out, std::size_t max_records,
                   std::size_t max_bytes) override;
  pipeline::Position position() const override { return position_.to_position(); }
  bool precedes(const pipeline::Position& earlier, const pipeline::Position& later) const override;
  std::string_view format() const override { return to_string(format_); }
  std::uint64_t pending_tail_bytes() const override { return pending_tail_bytes_; }
  void restore_marks(std::vector<pipeline::FileMark> stored) override { stored_marks_ = std::move(stored); }
  std::vector<pipeline::FileMark> take_marks() override;
  std::vector<std::string> seen_files() const override;
  std::vector<pipeline::ChangedFile> changed_files() const override { return changed_; }

  static constexpr std::size_t kDefaultChunkBytes = 1024 * 1024;

 private:
  struct Entry {
    std::string name;
    std::filesystem::path path;
    std::uint64_t start = 0;            // where this run reads it from
    std::optional<std::string> change;  // why it is read again from its start
    // What this run read of it, for its mark: the file read (set when opened) and the offset
    // past the last record returned of it.
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    std::uint64_t returned = 0;
    bool mark_due = false;  // take_marks() owes its mark
  };
  // The registry's plan (seek with stored marks): what each file of the folder needs.
  void plan_from_marks();
  // Registers the files a position of a run from before the registry had passed.
  void adopt_passed(std::size_t passed, const FilePosition& from);
  // Opens files_[next_file_++] where this run reads it from; false (failure_ set) when it is
  // unusable or changed under ChangePolicy::kFail.
  bool open_next();
  // Opens files_[index] and positions the stream at `offset` (0: the start of the file).
  void open(std::size_t index, std::uint64_t offset);
  void mark_due(std::size_t index);
  // Appends the next chunk of the open file to the stream; sets at_eof_ at its end.
  void fill();
  std::size_t read_chunk();
  // The next record of the open file; nullopt when the file is done (it is closed then) or
  // when its last line is unterminated and not settled (the source stops there).
  std::optional<pipeline::DecodedRecord> next_record();
  // Whether the open file's size and mtime have been left unchanged for settle_.
  bool settled() const;
  // Opens files_[index] at its start and probes it; false (failure_ set) when it is unusable.
  bool open_from_start(std::size_t index);
  // Called when a file is opened at its start: reads ahead into lookahead_ until a record
  // decodes (or kFormatProbeRecords have not); the reason the file is unusable, if it is.
  std::optional<std::string> probe_start();

  Format format_;
  std::chrono::milliseconds settle_;
  ChangePolicy on_change_;
  std::string identity_;
  std::vector<Entry> files_;   // in lexical order of name: those this run reads
  std::vector<std::string> listed_;  // every file the source found, escaped (seen_files)
  std::size_t next_file_ = 0;  // the file to open when the open one is done
  std::optional<ReadOnlyFile> in_;
  const Entry* open_entry_ = nullptr;
  bool at_eof_ = false;
  std::string chunk_;
  RecordStream stream_;
  FilePosition position_;
  bool tail_readable_ = false;   // the open file's unterminated last line has settled
  bool stopped_ = false;         // at an unsettled last line: nothing more is read this time
  std::uint64_t pending_tail_bytes_ = 0;
  std::deque<pipeline::DecodedRecord> lookahead_;  // read by probe_start, not yet returned
  std::optional<std::string> failure_;  // an unusable file, thrown by the next read()
  std::vector<pipeline::FileMark> stored_marks_;   // restore_marks: what earlier runs read
  std::vector<pipeline::FileMark> adopted_;        // adopt_passed: owed by the next take_marks
  std::vector<std::size_t> due_;                   // entries whose marks take_marks owes
  std::size_t returning_ = 0;  // the entry whose record was returned last (emit)
  std::vector<pipeline::ChangedFile> changed_;
};

// A FileSource behind the Source interface, as the run controller uses it.
std::unique_ptr<pipeline::Source> open_file_source(const std::filesystem::path& path, Format format,
                                                   std::chrono::milliseconds settle = kDefaultSettle,
                                                   LayoutPtr layout = built_in_layout(),
                                                   ChangePolicy on_change = ChangePolicy::kReread);

}  // namespace tidemark::connectors::file
