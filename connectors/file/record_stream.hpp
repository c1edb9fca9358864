#pragma once
// Splits a byte stream into records and decodes them, with bytes arriving in chunks of any
// size. FileSource feeds it from disk; decode_text feeds it a whole text (tests, fuzzing).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "connectors/file/csv_decoder.hpp"
#include "connectors/file/format.hpp"
#include "pipeline/core/record.hpp"

namespace tidemark::connectors::file {

// A record not complete within this many bytes (an unterminated quote, a file without
// newlines) becomes a decode error that ends at the first LF after them, so memory stays
// bounded by the batch, never by the file.
inline constexpr std::size_t kMaxRecordBytes = 16 * 1024 * 1024;
// How much of an over-long record is kept as its raw text.
inline constexpr std::size_t kOversizedRawBytes = 1024;

class RecordStream {
 public:
  explicit RecordStream(Format format, LayoutPtr layout = built_in_layout(),
                        std::size_t max_record_bytes = kMaxRecordBytes);

  // The next appended byte is the first byte of file `name` (forgets any CSV header).
  void start_file(std::string name);
  // The next appended byte is at `offset` of the current file, on line `line`; buffered
  // bytes are dropped, the CSV header is kept.
  void jump(std::uint64_t offset, std::uint64_t line);
  void append(std::string_view bytes);

  // CSV: consumes the header row if it has not been seen; true once it has (or for JSONL).
  // False means more bytes are needed, or at_eof, that the file has no header.
  bool read_header(bool at_eof);
  // The next record, or nullopt when more bytes are needed (at_eof: when none are left).
  // A UTF-8 BOM at the start of a file and completely empty lines are skipped: an empty
  // line carries no record in either format. A CSV record's decode_context is its file's
  // header line, which a FileRecordDecoder needs to decode it again.
  std::optional<pipeline::DecodedRecord> next(bool at_eof);

  // The file offset of the first byte not yet consumed.
  std::uint64_t offset() const { return buffer_offset_ + consumed_; }
  // Bytes appended but not yet consumed: after next(false) found no record, the start of a
  // record that has not ended yet.
  std::size_t pending_bytes() const { return buffer_.size() - consumed_; }
  // CSV: why the file's header makes it unusable, once the header has been read.
  std::optional<std::string> header_problem() const {
    return format_ == Format::kCsv ? csv_.header_problem() : std::nullopt;
  }

 private:
  struct Frame {
    std::string_view raw;
    pipeline::SourcePosition position;
    bool oversized = false;
  };
  std::optional<Frame> next_frame(bool at_eof);
  void take_header(const Frame& frame);
  std::string_view pending() const { return std::string_view(buffer_).substr(consumed_); }
  void consume(std::size_t bytes);

  Format format_;
  LayoutPtr layout_;
  std::size_t max_record_bytes_;
  CsvDecoder csv_;
  std::shared_ptr<const std::string> header_line_;  // CSV: the current file's, once read
  std::string file_;
  std::string buffer_;
  std::size_t consumed_ = 0;          // bytes of buffer_ already turned into frames
  std::uint64_t buffer_offset_ = 0;   // file offset of buffer_[0]
  std::uint64_t line_ = 1;            // line of the first unconsumed byte
  bool at_file_start_ = false;        // a BOM may still come
  // An over-long record is skipped up to the next LF; its start is kept for the error record.
  bool resyncing_ = false;
  std::string oversized_raw_;
  pipeline::SourcePosition oversized_position_;
};

// Decodes a whole in-memory text as one file named `file_name`.
std::vector<pipeline::DecodedRecord> decode_text(Format format, std::string_view text, const std::string& file_name,
                                                 const LayoutPtr& layout = built_in_layout());

}  // namespace tidemark::connectors::file
