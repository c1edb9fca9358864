#include "connectors/file/csv_decoder.hpp"

#include <utility>

#include "pipeline/core/utf8.hpp"

namespace tidemark::connectors::file {

CsvScan scan_csv_record(std::string_view data, bool at_eof, std::vector<std::string>* fields) {
  enum class State { kFieldStart, kUnquoted, kQuoted, kQuoteInQuoted, kAfterQuoted };
  CsvScan scan;
  State state = State::kFieldStart;
  std::size_t field_number = 1;
  std::string field;
  const auto fail = [&](std::string_view problem) {
    if (!scan.error) scan.error = std::string(problem) + " " + std::to_string(field_number);
  };
  const auto end_field = [&] {
    if (fields != nullptr) fields->push_back(std::move(field));
    field.clear();
    ++field_number;
  };
  const auto append = [&](char c) {
    if (fields != nullptr) field.push_back(c);
  };
  const auto finish_at = [&](std::size_t lf) {
    scan.complete = true;
    scan.content_size = lf > 0 && data[lf - 1] == '\r' ? lf - 1 : lf;
    scan.frame_size = lf + 1;
  };

  for (std::size_t i = 0; i < data.size(); ++i) {
    const char c = data[i];
    switch (state) {
      case State::kFieldStart:
        if (c == '"') {
          state = State::kQuoted;
          break;
        }
        state = State::kUnquoted;
        [[fallthrough]];
      case State::kUnquoted:
      case State::kAfterQuoted:
        if (c == ',') {
          end_field();
          state = State::kFieldStart;
        } else if (c == '\n') {
          finish_at(i);
          // The CR of a CRLF is the terminator's, not the field's.
          if (fields != nullptr && !field.empty() && field.back() == '\r') field.pop_back();
          end_field();
          return scan;
        } else {
          if (c == '"' && state == State::kUnquoted) fail("quote inside unquoted field");
          append(c);
        }
        break;
      case State::kQuoted:
        if (c == '"') {
          state = State::kQuoteInQuoted;
        } else {
          append(c);
        }
        break;
      case State::kQuoteInQuoted:
        if (c == '"') {  // "" is an escaped quote
          append(c);
          state = State::kQuoted;
        } else if (c == ',') {
          end_field();
          state = State::kFieldStart;
        } else if (c == '\n') {
          finish_at(i);
          end_field();
          return scan;
        } else if (c == '\r' && i + 1 < data.size() && data[i + 1] == '\n') {
          // CR of the CRLF that ends the record: the LF comes next.
        } else {
          fail("unexpected character after closing quote in field");
          append(c);
          state = State::kAfterQuoted;
        }
        break;
    }
  }
  if (!at_eof) return scan;
  if (state == State::kQuoted) fail("unterminated quoted field");
  scan.complete = true;
  scan.content_size = scan.frame_size = data.size();
  end_field();
  return scan;
}

void CsvDecoder::read_header(std::string_view raw) {
  has_header_ = true;
  std::vector<std::string> names;
  const CsvScan scan = scan_csv_record(raw, true, &names);
  if (scan.error) {
    header_error_ = *scan.error;
    return;
  }
  column_count_ = names.size();
  columns_.assign(layout_->names.size(), std::nullopt);
  for (std::size_t column = 0; column < names.size(); ++column) {
    const auto field = layout_->index(names[column]);
    if (!field) {
      if (layout_->undeclared) undeclared_.emplace_back(column, std::move(names[column]));
      continue;
    }
    if (columns_[*field]) {
      header_error_ = "column \"" + names[column] + "\" appears more than once";
      return;
    }
    columns_[*field] = column;
  }
}

void CsvDecoder::reject_header(std::string reason) {
  has_header_ = true;
  header_error_ = std::move(reason);
}

std::optional<std::string> CsvDecoder::header_problem() const {
  if (!has_header_) return std::nullopt;
  if (header_error_) return "unusable header row: " + *header_error_;
  std::string missing;
  for (std::size_t i = 0; i < layout_->names.size(); ++i) {
    if (columns_[i] || !layout_->required[i]) continue;
    missing += (missing.empty() ? "" : ", ") + layout_->names[i];
  }
  if (missing.empty()) return std::nullopt;
  return "the header row lacks required column(s) " + missing;
}

pipeline::DecodedRecord CsvDecoder::decode(std::string_view raw, pipeline::SourcePosition position) const {
  pipeline::DecodedRecord record;
  record.raw = std::string(raw);
  record.position = std::move(position);
  if (header_error_) {
    record.decode_error = "csv: unusable header row: " + *header_error_;
    return record;
  }
  // The file's own BOM is skipped before its header (RecordStream); one here was pasted in.
  if (raw.starts_with(pipeline::kUtf8Bom)) {
    record.decode_error = "csv: " + std::string(pipeline::kMisplacedBom);
    return record;
  }
  std::vector<std::string> values;
  values.reserve(column_count_);
  const CsvScan scan = scan_csv_record(raw, true, &values);
  if (scan.error) {
    record.decode_error = "csv: " + *scan.error;
    return record;
  }
  if (values.size() != column_count_) {
    record.decode_error =
        "csv: " + std::to_string(values.size()) + " fields, header has " + std::to_string(column_count_);
    return record;
  }
  record.fields.resize(columns_.size());
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (!columns_[i]) continue;
    std::string& value = values[*columns_[i]];
    // An empty optional field is absent; an empty required one stays, for its own message.
    if (value.empty() && !layout_->required[i]) continue;
    record.fields[i] = pipeline::Field{std::move(value), pipeline::FieldKind::kUntyped};
  }
  for (const auto& [column, name] : undeclared_) {
    if (values[column].empty()) continue;
    record.undeclared.emplace_back(name, pipeline::Field{std::move(values[column]), pipeline::FieldKind::kUntyped});
  }
  return record;
}

}  // namespace tidemark::connectors::file
