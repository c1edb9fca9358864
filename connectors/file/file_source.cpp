#include "connectors/file/file_source.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "pipeline/core/utf8.hpp"

namespace tidemark::connectors::file {

namespace {

using pipeline::SourceError;

std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

FilePosition parse_position(const pipeline::Position& position) {
  auto parsed = FilePosition::parse(position);
  if (!parsed) {
    throw SourceError("file source: the stored position '" + position.text +
                      "' is not a file position (file:offset); was the pipeline's source changed?");
  }
  return *parsed;
}

}  // namespace

std::vector<std::filesystem::path> folder_files(const std::filesystem::path& folder, Format format,
                                                std::error_code& ec) {
  std::vector<std::filesystem::path> files;
  std::filesystem::directory_iterator it(folder, ec);
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::error_code status_ec;
    if (it->is_regular_file(status_ec) && format_from_extension(it->path()) == format) files.push_back(it->path());
  }
  return files;
}

FileSource::FileSource(const std::filesystem::path& path, Format format, std::size_t chunk_bytes,
                       std::chrono::milliseconds settle, LayoutPtr layout)
    : format_(format), settle_(settle), chunk_(chunk_bytes, '\0'), stream_(format, std::move(layout)) {
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::canonical(path, ec);
  if (ec) throw SourceError("file source " + quoted(path) + ": " + ec.message());
  identity_ = pipeline::escape_bytes(canonical.string());

  if (!std::filesystem::is_directory(canonical, ec)) {
    files_.push_back(Entry{canonical.filename().string(), canonical});
    return;
  }
  for (const auto& child : folder_files(canonical, format_, ec)) files_.push_back(Entry{child.filename().string(), child});
  if (ec) throw SourceError("file source " + quoted(path) + ": cannot list the folder: " + ec.message());
  // std::string compares bytes as unsigned char: the same order FilePosition uses.
  std::sort(files_.begin(), files_.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
}

void FileSource::seek(const pipeline::Position& from) { seek(parse_position(from)); }

bool FileSource::precedes(const pipeline::Position& earlier, const pipeline::Position& later) const {
  return parse_position(earlier) < parse_position(later);
}

void FileSource::seek(const FilePosition& from) {
  in_.close();
  open_entry_ = nullptr;
  lookahead_.clear();
  failure_.reset();
  stopped_ = false;
  pending_tail_bytes_ = 0;
  position_ = from;
  const auto first = std::lower_bound(files_.begin(), files_.end(), from.file,
                                      [](const Entry& entry, const std::string& name) { return entry.name < name; });
  next_file_ = static_cast<std::size_t>(first - files_.begin());
  // A file that is gone is skipped: reading continues with the next name after it.
  if (first == files_.end() || first->name != from.file) return;
  if (from.offset == 0) {
    open_from_start(next_file_++);  // an unusable file fails the next read
  } else {
    open(next_file_++, from.offset);
  }
}

std::size_t FileSource::read(std::vector<pipeline::DecodedRecord>& out, std::size_t max_records,
                             std::size_t max_bytes) {
  if (failure_) throw SourceError(*failure_);
  std::size_t appended = 0;
  std::size_t bytes = 0;
  // False when the record would take the batch past max_bytes: it waits for the next read.
  const auto emit = [&](pipeline::DecodedRecord record) {
    if (appended > 0 && record.raw.size() > max_bytes - bytes) {
      lookahead_.push_front(std::move(record));
      return false;
    }
    bytes += record.raw.size();
    position_ = FilePosition{record.position.file, record.position.end_offset};
    out.push_back(std::move(record));
    ++appended;
    return true;
  };
  while (appended < max_records && bytes < max_bytes) {
    if (!lookahead_.empty()) {
      pipeline::DecodedRecord record = std::move(lookahead_.front());
      lookahead_.pop_front();
      if (!emit(std::move(record))) break;
      continue;
    }
    if (open_entry_ == nullptr) {
      if (stopped_ || next_file_ >= files_.size()) break;
      if (!open_from_start(next_file_++)) {
        // What came before the unusable file is returned first; the run fails on the next read.
        if (appended == 0) throw SourceError(*failure_);
        break;
      }
      continue;
    }
    if (auto record = next_record()) {
      if (!emit(std::move(*record))) break;
    }
  }
  return appended;
}

bool FileSource::open_from_start(std::size_t index) {
  open(index, 0);
  failure_ = probe_start();
  if (!failure_) return true;
  // Nothing of this file is returned, so nothing of it can commit.
  lookahead_.clear();
  in_.close();
  open_entry_ = nullptr;
  return false;
}

std::optional<pipeline::DecodedRecord> FileSource::next_record() {
  for (;;) {
    // At the end of the file the bytes left are a last line without its newline: a record
    // only once the file has settled, else possibly a writer's half-written line.
    const bool final_bytes = at_eof_ && (tail_readable_ || stream_.pending_bytes() == 0);
    if (auto record = stream_.next(final_bytes)) return record;
    if (!at_eof_) {
      fill();
      continue;
    }
    if (!final_bytes) {
      if (settled()) {
        tail_readable_ = true;
        continue;
      }
      pending_tail_bytes_ = stream_.pending_bytes();
      stopped_ = true;  // later files wait too: the checkpoint may not pass this line
    }
    in_.close();
    open_entry_ = nullptr;
    return std::nullopt;
  }
}

bool FileSource::settled() const {
  if (settle_.count() <= 0) return true;
  std::error_code ec;
  const auto size = std::filesystem::file_size(open_entry_->path, ec);
  const auto mtime = ec ? std::filesystem::file_time_type{} : std::filesystem::last_write_time(open_entry_->path, ec);
  if (ec) return false;  // gone or unreadable: not a settled file
  // A size other than what was read means a writer is still at it.
  if (size != stream_.offset() + stream_.pending_bytes()) return false;
  return std::filesystem::file_time_type::clock::now() - mtime >= settle_;
}

std::optional<std::string> FileSource::probe_start() {
  const std::string name = "'" + open_entry_->name + "'";
  std::size_t bytes = 0;
  // The first call reads a CSV header, so its problem is known before any record is kept.
  while (lookahead_.size() < kFormatProbeRecords) {
    auto record = next_record();
    if (auto problem = stream_.header_problem()) {
      return "file source: " + name + ": " + *problem + "; nothing of this file was loaded";
    }
    if (!record) return std::nullopt;
    const bool decoded = !record->decode_error;
    bytes += record->raw.size();
    lookahead_.push_back(std::move(*record));
    // Memory stays bounded: huge undecodable lines are quarantined one by one instead.
    if (decoded || bytes >= kFormatProbeBytes) return std::nullopt;
  }
  return "file source: " + name + ": its first " + std::to_string(kFormatProbeRecords) +
         " records all fail to decode as " + std::string(to_string(format_)) + " (first: " +
         lookahead_.front().decode_error.value_or("") + "); is --format right? nothing of this file was loaded";
}

void FileSource::open(std::size_t index, std::uint64_t offset) {
  const Entry& entry = files_[index];
  in_.close();
  in_.clear();
  in_.open(entry.path, std::ios::binary);
  if (!in_) throw SourceError("file source: cannot open " + quoted(entry.path) + ": " + std::strerror(errno));
  open_entry_ = &entry;
  at_eof_ = false;
  tail_readable_ = false;
  stream_.start_file(entry.name);
  if (offset == 0) return;

  // A CSV file's records need its header, so it is read even when resuming past it.
  if (format_ == Format::kCsv) {
    while (!stream_.read_header(at_eof_) && !at_eof_) fill();
  }
  const std::uint64_t resume = std::max(offset, stream_.offset());
  // Count the lines before the resume point so positions stay exact; this reads the prefix
  // in chunks but decodes nothing.
  in_.clear();
  in_.seekg(0);
  std::uint64_t line = 1;
  std::uint64_t scanned = 0;
  while (scanned < resume) {
    const std::size_t got = read_chunk();
    if (got == 0) break;
    const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(got, resume - scanned));
    line += static_cast<std::uint64_t>(std::count(chunk_.begin(), chunk_.begin() + static_cast<std::ptrdiff_t>(take), '\n'));
    scanned += take;
  }
  // A checkpoint past the end of a file (it shrank) resumes at its end.
  in_.clear();
  in_.seekg(static_cast<std::streamoff>(scanned));
  at_eof_ = false;
  stream_.jump(scanned, line);
}

std::size_t FileSource::read_chunk() {
  in_.read(chunk_.data(), static_cast<std::streamsize>(chunk_.size()));
  if (in_.bad()) throw SourceError("file source: cannot read " + quoted(open_entry_->path) + ": " + std::strerror(errno));
  return static_cast<std::size_t>(in_.gcount());
}

void FileSource::fill() {
  const std::size_t got = read_chunk();
  if (got < chunk_.size()) at_eof_ = true;
  stream_.append(std::string_view(chunk_).substr(0, got));
}

std::unique_ptr<pipeline::Source> open_file_source(const std::filesystem::path& path, Format format,
                                                   std::chrono::milliseconds settle, LayoutPtr layout) {
  return std::make_unique<FileSource>(path, format, FileSource::kDefaultChunkBytes, settle, std::move(layout));
}

}  // namespace tidemark::connectors::file
