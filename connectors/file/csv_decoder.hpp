#pragma once
// RFC 4180 CSV: record boundaries and field decoding over byte strings, no I/O.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "connectors/file/record_fields.hpp"
#include "pipeline/core/record.hpp"

namespace tidemark::connectors::file {

// What scan_csv_record found at the start of its input.
struct CsvScan {
  bool complete = false;          // false: the record may continue past the input
  std::size_t content_size = 0;   // the record's bytes without its line terminator
  std::size_t frame_size = 0;     // content plus terminator: where the next record starts
  std::optional<std::string> error;  // the first quoting problem, e.g. "unterminated quoted field 2"
};

// Scans one record from the start of `data`. A record ends at a LF (CRLF: the CR is not
// content) outside quotes, or at the end of the input when `at_eof`. A quote in an unquoted
// field is an error but does not open a quoted section, so one bad record cannot swallow
// the lines after it. Appends the unescaped fields to `fields` when given.
CsvScan scan_csv_record(std::string_view data, bool at_eof, std::vector<std::string>* fields = nullptr);

// Decodes records against the header row of their file.
class CsvDecoder {
 public:
  bool has_header() const { return has_header_; }
  // Takes the first row of a file as its header. Columns are matched by exact name; a
  // broken header makes every record of the file a decode error that says why.
  void read_header(std::string_view raw);
  void reject_header(std::string reason);
  // Why the header makes the file unusable (it is broken, or it lacks a required column),
  // or nullopt when it is fine or not read yet.
  std::optional<std::string> header_problem() const;
  pipeline::DecodedRecord decode(std::string_view raw, pipeline::SourcePosition position) const;

 private:
  bool has_header_ = false;
  std::optional<std::string> header_error_;
  std::size_t column_count_ = 0;
  std::array<std::optional<std::size_t>, kRecordFields.size()> columns_{};  // by kRecordFields index
};

}  // namespace tidemark::connectors::file
