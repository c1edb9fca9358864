#include "connectors/file/file_source.hpp"

#include <algorithm>
#include <system_error>
#include <unordered_map>

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

// What became of a file since `mark` was taken of it; nullopt while it still holds what was read.
std::optional<std::string> change_since(const ReadOnlyFile& file, const pipeline::FileMark& mark) {
  if (file.device() != mark.device || file.inode() != mark.inode) {
    return "replaced: another file has its name now (device " + std::to_string(file.device()) + ", inode " +
           std::to_string(file.inode()) + "; read: " + std::to_string(mark.device) + ", " + std::to_string(mark.inode) +
           ")";
  }
  const std::uint64_t size = file.size();
  if (size < mark.bytes) {
    return "truncated: it has " + std::to_string(size) + " bytes, and " + std::to_string(mark.bytes) +
           " had been read";
  }
  if (file.fingerprint(mark.bytes) != mark.fingerprint) {
    return "rewritten: its bytes before offset " + std::to_string(mark.bytes) + " are not those that were read";
  }
  return std::nullopt;
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
                       std::chrono::milliseconds settle, LayoutPtr layout, ChangePolicy on_change)
    : format_(format),
      settle_(settle),
      on_change_(on_change),
      chunk_(chunk_bytes, '\0'),
      stream_(format, std::move(layout)) {
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::canonical(path, ec);
  if (ec) throw SourceError("file source " + quoted(path) + ": " + ec.message());
  identity_ = pipeline::escape_bytes(canonical.string());

  if (!std::filesystem::is_directory(canonical, ec)) {
    // Refused here: opening a FIFO without a writer would block the run (and its signals).
    if (!std::filesystem::is_regular_file(canonical, ec)) {
      throw SourceError("file source " + quoted(path) + ": not a regular file (a FIFO, a socket or a device); only "
                        "regular files are read");
    }
    files_.push_back(Entry{canonical.filename().string(), canonical});
  } else {
    for (const auto& child : folder_files(canonical, format_, ec)) {
      files_.push_back(Entry{child.filename().string(), child});
    }
    if (ec) throw SourceError("file source " + quoted(path) + ": cannot list the folder: " + ec.message());
    // std::string compares bytes as unsigned char: the same order FilePosition uses.
    std::sort(files_.begin(), files_.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  }
  for (const Entry& entry : files_) listed_.push_back(pipeline::escape_bytes(entry.name));
}

void FileSource::seek(const pipeline::Position& from) { seek(parse_position(from)); }

bool FileSource::precedes(const pipeline::Position& earlier, const pipeline::Position& later) const {
  return parse_position(earlier) < parse_position(later);
}

void FileSource::seek(const FilePosition& from) {
  in_.reset();
  open_entry_ = nullptr;
  lookahead_.clear();
  failure_.reset();
  stopped_ = false;
  pending_tail_bytes_ = 0;
  position_ = from;
  if (!stored_marks_.empty()) {
    plan_from_marks();
    return;
  }
  const auto first = std::lower_bound(files_.begin(), files_.end(), from.file,
                                      [](const Entry& entry, const std::string& name) { return entry.name < name; });
  next_file_ = static_cast<std::size_t>(first - files_.begin());
  adopt_passed(next_file_, from);
  // A file that is gone is skipped: reading continues with the next name after it.
  if (first == files_.end() || first->name != from.file) return;
  files_[next_file_].returned = from.offset;
  mark_due(next_file_);
  if (from.offset == 0) {
    open_from_start(next_file_++);  // an unusable file fails the next read
  } else {
    open(next_file_++, from.offset);
  }
}

void FileSource::adopt_passed(std::size_t passed, const FilePosition& from) {
  if (from.file.empty()) return;  // the start of the source: nothing was passed
  for (std::size_t i = 0; i < passed; ++i) {
    try {
      const ReadOnlyFile file(files_[i].path);
      const std::uint64_t size = file.size();
      adopted_.push_back({pipeline::escape_bytes(files_[i].name), size, file.device(), file.inode(),
                          file.fingerprint(size)});
    } catch (const SourceError&) {
      // Gone or unreadable since it was listed: not registered, so a later run reads it whole.
    }
  }
}

void FileSource::plan_from_marks() {
  std::unordered_map<std::string, const pipeline::FileMark*> marks;
  for (const pipeline::FileMark& mark : stored_marks_) marks.emplace(mark.file, &mark);
  std::vector<Entry> planned;
  for (Entry& entry : files_) {
    const auto found = marks.find(pipeline::escape_bytes(entry.name));
    if (found == marks.end()) {  // never read: from its start
      planned.push_back(std::move(entry));
      continue;
    }
    const pipeline::FileMark& mark = *found->second;
    std::uint64_t size = 0;
    try {
      const ReadOnlyFile file(entry.path);
      entry.change = change_since(file, mark);
      size = file.size();
    } catch (const SourceError&) {
      planned.push_back(std::move(entry));  // opened again in turn, which reports why it cannot be
      continue;
    }
    if (entry.change) {
      changed_.push_back({found->first, *entry.change});
    } else if (size == mark.bytes) {
      continue;  // read whole, and unchanged
    } else {
      entry.start = mark.bytes;  // it only grew
      entry.returned = mark.bytes;
    }
    planned.push_back(std::move(entry));
  }
  files_ = std::move(planned);
  next_file_ = 0;
  returning_ = 0;
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
    // Records come file by file: the entry is found once per file, not once per record.
    if (returning_ >= files_.size() || files_[returning_].name != position_.file) {
      returning_ = static_cast<std::size_t>(
          std::lower_bound(files_.begin(), files_.end(), position_.file,
                           [](const Entry& listed, const std::string& name) { return listed.name < name; }) -
          files_.begin());
    }
    files_[returning_].returned = position_.offset;
    mark_due(returning_);
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
      if (!open_next()) {
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

bool FileSource::open_next() {
  const std::size_t index = next_file_++;
  const Entry& entry = files_[index];
  if (entry.change && on_change_ == ChangePolicy::kFail) {
    failure_ = "file source: '" + entry.name + "' changed since an earlier run read it (" + *entry.change +
               ") and on_change is fail: nothing of it was loaded. Put back the file that was read, or let a run "
               "with on_change: reread read it again (docs/sources.md, \"Files that change\")";
    return false;
  }
  if (entry.start > 0) {
    open(index, entry.start);
  } else if (!open_from_start(index)) {
    return false;
  }
  // Registered even if no record of it comes (emptied, or rewritten to a header alone).
  if (entry.change) mark_due(index);
  return true;
}

void FileSource::mark_due(std::size_t index) {
  if (files_[index].mark_due) return;
  files_[index].mark_due = true;
  due_.push_back(index);
}

std::vector<pipeline::FileMark> FileSource::take_marks() {
  std::vector<pipeline::FileMark> marks = std::move(adopted_);
  adopted_.clear();
  for (const std::size_t index : due_) {
    Entry& entry = files_[index];
    entry.mark_due = false;
    pipeline::FileMark mark{pipeline::escape_bytes(entry.name), entry.returned, entry.device, entry.inode, ""};
    // Of the file that was read only: one that took its name meanwhile keeps the fingerprint
    // empty, which no file matches, so the next run reads the name again from its start.
    try {
      const ReadOnlyFile now(entry.path);
      if (now.device() == entry.device && now.inode() == entry.inode) mark.fingerprint = now.fingerprint(entry.returned);
    } catch (const SourceError&) {
      // Gone: the next run no longer lists it.
    }
    marks.push_back(std::move(mark));
  }
  due_.clear();
  return marks;
}

std::vector<std::string> FileSource::seen_files() const { return listed_; }

bool FileSource::open_from_start(std::size_t index) {
  open(index, 0);
  failure_ = probe_start();
  if (!failure_) return true;
  // Nothing of this file is returned, so nothing of it can commit.
  lookahead_.clear();
  in_.reset();
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
    in_.reset();
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
  Entry& entry = files_[index];
  in_.reset();
  in_.emplace(entry.path);
  entry.device = in_->device();
  entry.inode = in_->inode();
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
  in_->seek(0);
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
  in_->seek(scanned);
  at_eof_ = false;
  stream_.jump(scanned, line);
}

std::size_t FileSource::read_chunk() { return in_->read(chunk_.data(), chunk_.size()); }

void FileSource::fill() {
  const std::size_t got = read_chunk();
  if (got < chunk_.size()) at_eof_ = true;
  stream_.append(std::string_view(chunk_).substr(0, got));
}

std::unique_ptr<pipeline::Source> open_file_source(const std::filesystem::path& path, Format format,
                                                   std::chrono::milliseconds settle, LayoutPtr layout,
                                                   ChangePolicy on_change) {
  return std::make_unique<FileSource>(path, format, FileSource::kDefaultChunkBytes, settle, std::move(layout),
                                      on_change);
}

}  // namespace tidemark::connectors::file
