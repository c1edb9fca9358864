#pragma once
// RFC 4180 CSV: record boundaries and field decoding over byte strings, no I/O.
#include <utility>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "connectors/file/record_layout.hpp"
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

// Decodes records against the header row of their file: the columns the layout names as its
// fields (text of no type: kUntyped; an empty field is absent), the other columns as
// undeclared fields when the layout asks for them.
class CsvDecoder {
 public:
  explicit CsvDecoder(LayoutPtr layout = built_in_layout()) : layout_(std::move(layout)) {}
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
  LayoutPtr layout_;
  std::vector<std::optional<std::size_t>> columns_;  // by layout index: the column holding it
  std::vector<std::pair<std::size_t, std::string>> undeclared_;  // other columns, when asked for
};

}  // namespace tidemark::connectors::file
