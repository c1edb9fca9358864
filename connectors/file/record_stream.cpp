#include "connectors/file/record_stream.hpp"

#include <algorithm>
#include <utility>

#include "connectors/file/jsonl_decoder.hpp"
#include "pipeline/core/utf8.hpp"

namespace tidemark::connectors::file {

RecordStream::RecordStream(Format format, LayoutPtr layout, std::size_t max_record_bytes)
    : format_(format), layout_(std::move(layout)), max_record_bytes_(max_record_bytes), csv_(layout_) {}

void RecordStream::start_file(std::string name) {
  file_ = std::move(name);
  csv_ = CsvDecoder{layout_};
  header_line_.reset();
  jump(0, 1);
  at_file_start_ = true;
}

void RecordStream::jump(std::uint64_t offset, std::uint64_t line) {
  buffer_.clear();
  consumed_ = 0;
  buffer_offset_ = offset;
  line_ = line;
  at_file_start_ = false;
  resyncing_ = false;
}

void RecordStream::append(std::string_view bytes) {
  // Drop consumed bytes first so the buffer holds at most one partial record plus a chunk.
  buffer_.erase(0, consumed_);
  buffer_offset_ += consumed_;
  consumed_ = 0;
  buffer_.append(bytes);
}

void RecordStream::consume(std::size_t bytes) {
  const std::string_view taken = pending().substr(0, bytes);
  line_ += static_cast<std::uint64_t>(std::count(taken.begin(), taken.end(), '\n'));
  consumed_ += bytes;
}

std::optional<RecordStream::Frame> RecordStream::next_frame(bool at_eof) {
  for (;;) {
    const std::string_view data = pending();
    if (resyncing_) {
      const std::size_t lf = data.find('\n');
      if (lf == std::string_view::npos && !at_eof) {
        consume(data.size());
        return std::nullopt;
      }
      consume(lf == std::string_view::npos ? data.size() : lf + 1);
      resyncing_ = false;
      oversized_position_.end_offset = offset();
      return Frame{oversized_raw_, oversized_position_, true};
    }
    if (at_file_start_) {
      using pipeline::kUtf8Bom;
      if (data.size() < kUtf8Bom.size() && !at_eof && kUtf8Bom.starts_with(data)) return std::nullopt;
      at_file_start_ = false;
      if (data.starts_with(kUtf8Bom)) consume(kUtf8Bom.size());
      continue;
    }
    if (data.empty()) return std::nullopt;

    // Only the first max_record_bytes_ bytes may hold a record, whatever the chunking, so
    // where an over-long record ends does not depend on where reading started.
    const std::string_view window = data.substr(0, max_record_bytes_);
    const bool window_eof = at_eof && data.size() <= max_record_bytes_;
    std::size_t content_size = 0;
    std::size_t frame_size = 0;
    if (format_ == Format::kCsv) {
      const CsvScan scan = scan_csv_record(window, window_eof);
      if (scan.complete) {
        content_size = scan.content_size;
        frame_size = scan.frame_size;
      }
    } else if (const std::size_t lf = window.find('\n'); lf != std::string_view::npos) {
      content_size = lf > 0 && window[lf - 1] == '\r' ? lf - 1 : lf;
      frame_size = lf + 1;
    } else if (window_eof) {
      content_size = frame_size = window.size();
    }

    if (frame_size == 0) {  // the record continues past the bytes we have
      if (data.size() <= max_record_bytes_) return std::nullopt;
      oversized_raw_ = std::string(data.substr(0, kOversizedRawBytes));
      oversized_position_ = pipeline::SourcePosition{file_, line_, offset(), 0};
      consume(max_record_bytes_);
      resyncing_ = true;
      continue;
    }
    Frame frame{data.substr(0, content_size), pipeline::SourcePosition{file_, line_, offset(), offset() + frame_size}};
    consume(frame_size);
    if (content_size == 0) continue;  // an empty line is no record
    return frame;
  }
}

void RecordStream::take_header(const Frame& frame) {
  header_line_ = std::make_shared<const std::string>(frame.raw);
  if (frame.oversized) {
    csv_.reject_header("longer than " + std::to_string(max_record_bytes_) + " bytes");
  } else {
    csv_.read_header(frame.raw);
  }
}

bool RecordStream::read_header(bool at_eof) {
  if (format_ != Format::kCsv || csv_.has_header()) return true;
  const auto frame = next_frame(at_eof);
  if (!frame) return false;
  take_header(*frame);
  return true;
}

std::optional<pipeline::DecodedRecord> RecordStream::next(bool at_eof) {
  while (auto frame = next_frame(at_eof)) {
    if (format_ == Format::kCsv && !csv_.has_header()) {
      take_header(*frame);
      continue;
    }
    if (frame->oversized) {
      pipeline::DecodedRecord record;
      record.raw = std::string(frame->raw);
      record.position = std::move(frame->position);
      record.decode_error = "record longer than " + std::to_string(max_record_bytes_) + " bytes";
      record.decode_context = header_line_;
      return record;
    }
    if (format_ == Format::kCsv) {
      pipeline::DecodedRecord record = csv_.decode(frame->raw, std::move(frame->position));
      record.decode_context = header_line_;
      return record;
    }
    return decode_jsonl_line(frame->raw, std::move(frame->position), *layout_);
  }
  return std::nullopt;
}

std::vector<pipeline::DecodedRecord> decode_text(Format format, std::string_view text, const std::string& file_name,
                                                 const LayoutPtr& layout) {
  RecordStream stream(format, layout);
  stream.start_file(file_name);
  stream.append(text);
  std::vector<pipeline::DecodedRecord> records;
  while (auto record = stream.next(true)) records.push_back(std::move(*record));
  return records;
}

}  // namespace tidemark::connectors::file
