// FileSource: folder listing and order, batches across files, exact resume from a checkpoint.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "pipeline/core/validate.hpp"
#include "tests/support/built_in_record.hpp"
#include "connectors/file/file_source.hpp"

namespace tidemark::connectors::file {
namespace {

namespace fs = std::filesystem;
using pipeline::Position;
using pipeline::DecodedRecord;

// A fresh folder under the system temp directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("tidemark_file_source_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }
  // A finished file: its mtime is an hour ago, so even a last line without a newline has
  // settled.
  fs::path write(const std::string& name, std::string_view content) const {
    const fs::path file = write_fresh(name, content);
    fs::last_write_time(file, fs::file_time_type::clock::now() - std::chrono::hours(1));
    return file;
  }
  // A file written just now, as one a writer may still be appending to.
  fs::path write_fresh(const std::string& name, std::string_view content) const {
    const fs::path file = path_ / name;
    std::ofstream(file, std::ios::binary) << content;
    return file;
  }

 private:
  fs::path path_;
};

constexpr std::string_view kHeader = "transaction_id,source_revision,amount,account_id,occurred_at\n";

std::string csv(std::initializer_list<std::string_view> ids) {
  std::string text(kHeader);
  for (std::string_view id : ids) text += std::string(id) + ",1,1.00,,\n";
  return text;
}

std::vector<DecodedRecord> read_all(pipeline::Source& source, std::size_t batch = 1000) {
  std::vector<DecodedRecord> records;
  while (source.read(records, batch) > 0) {
  }
  return records;
}

std::vector<std::string> ids_of(const std::vector<DecodedRecord>& records) {
  std::vector<std::string> ids;
  for (const auto& r : records) ids.push_back(r.field(pipeline::built_in_field::kTransactionId) ? r.field(pipeline::built_in_field::kTransactionId)->text : "<" + r.raw + ">");
  return ids;
}

std::string describe_field(const std::optional<pipeline::Field>& field) {
  return field ? std::to_string(static_cast<int>(field->kind)) + ":" + field->text : "-";
}

// Everything a record carries, so two reads can be compared exactly.
std::string describe(const DecodedRecord& r) {
  return r.position.file + "|" + std::to_string(r.position.line) + "|" + std::to_string(r.position.offset) + "|" +
         std::to_string(r.position.end_offset) + "|" + r.raw + "|" + r.decode_error.value_or("ok") + "|" +
         describe_field(r.field(pipeline::built_in_field::kTransactionId)) + "|" + describe_field(r.field(pipeline::built_in_field::kSourceRevision)) + "|" +
         describe_field(r.field(pipeline::built_in_field::kAmount)) + "|" + describe_field(r.field(pipeline::built_in_field::kAccountId)) + "|" + describe_field(r.field(pipeline::built_in_field::kOccurredAt));
}

std::vector<std::string> describe_all(const std::vector<DecodedRecord>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) out.push_back(describe(r));
  return out;
}

TEST(FileSource, FolderReadsMatchingFilesInLexicalOrderAndIgnoresOthers) {
  TempDir dir;
  dir.write("b.csv", csv({"b1", "b2"}));
  dir.write("a.csv", csv({"a1"}));
  dir.write("B.csv", csv({"B1"}));  // 'B' < 'a' in byte order
  dir.write("c.txt", csv({"ignored"}));
  dir.write("d.jsonl", "{\"transaction_id\":\"ignored\"}\n");
  dir.write("e.csv.bak", csv({"ignored"}));
  fs::create_directory(dir.path() / "sub.csv");
  FileSource source(dir.path(), Format::kCsv);
  const auto records = read_all(source);
  EXPECT_EQ(ids_of(records), (std::vector<std::string>{"B1", "a1", "b1", "b2"}));
  EXPECT_EQ(records[1].position.file, "a.csv");
  EXPECT_EQ(records[1].position.line, 2u);
  EXPECT_EQ(source.position().text, (FilePosition{"b.csv", fs::file_size(dir.path() / "b.csv")}.to_position().text));
}

TEST(FileSource, JsonlFolderReadsJsonlAndNdjsonFiles) {
  TempDir dir;
  dir.write("2.ndjson", "{\"transaction_id\":\"n\"}\n");
  dir.write("1.jsonl", "{\"transaction_id\":\"j\"}\n");
  dir.write("0.csv", csv({"ignored"}));
  dir.write("3.json", "{\"transaction_id\":\"ignored\"}\n");
  FileSource source(dir.path(), Format::kJsonl);
  EXPECT_EQ(ids_of(read_all(source)), (std::vector<std::string>{"j", "n"}));
}

TEST(FileSource, BatchesSpanFilesAndPositionFollowsTheLastRecordReturned) {
  TempDir dir;
  dir.write("a.csv", csv({"a1", "a2"}));
  dir.write("b.csv", csv({"b1", "b2"}));
  FileSource source(dir.path(), Format::kCsv);
  EXPECT_EQ(source.position().text, FilePosition{}.to_position().text);
  std::vector<DecodedRecord> batch;
  ASSERT_EQ(source.read(batch, 3), 3u);
  EXPECT_EQ(ids_of(batch), (std::vector<std::string>{"a1", "a2", "b1"}));
  EXPECT_EQ(source.position().text, (FilePosition{"b.csv", batch[2].position.end_offset}.to_position().text));
  EXPECT_EQ(batch[2].position.offset, kHeader.size());
  batch.clear();
  ASSERT_EQ(source.read(batch, 3), 1u);
  EXPECT_EQ(source.read(batch, 3), 0u);
  EXPECT_EQ(source.read(batch, 3), 0u);
  EXPECT_EQ(ids_of(batch), (std::vector<std::string>{"b2"}));
}

// Read k records, checkpoint, reopen, seek: the two parts must equal one full read, for
// every k from 0 to the end, with tiny and default read chunks.
void expect_exact_resume(const fs::path& path, Format format, std::size_t expected_records) {
  for (std::size_t chunk : {std::size_t{5}, std::size_t{64}, FileSource::kDefaultChunkBytes}) {
    FileSource full_source(path, format, chunk);
    const auto full = describe_all(read_all(full_source, 3));
    ASSERT_EQ(full.size(), expected_records);
    for (std::size_t k = 0; k <= full.size(); ++k) {
      FileSource first(path, format, chunk);
      std::vector<DecodedRecord> head;
      while (head.size() < k) ASSERT_GT(first.read(head, k - head.size()), 0u);
      const Position checkpoint = first.position();
      FileSource second(path, format, chunk);
      second.seek(checkpoint);
      EXPECT_EQ(second.position().text, checkpoint.text);
      auto parts = describe_all(head);
      const auto tail = describe_all(read_all(second, 2));
      parts.insert(parts.end(), tail.begin(), tail.end());
      EXPECT_EQ(parts, full) << "split after " << k << " records at " << checkpoint.text << ", chunk "
                             << chunk;
    }
  }
}

TEST(FileSource, CsvFolderResumesExactlyAtEverySplitPoint) {
  TempDir dir;
  dir.write("a.csv", "\xEF\xBB\xBF" + std::string(kHeader) + "a1,1,1,,\r\n\"a\n2\",2,2,\"x,y\",\r\n\r\nbad\"q,1,1,,\r\n");
  dir.write("b.csv", csv({}));  // header only
  dir.write("c.csv", "amount,transaction_id,source_revision\n\n5,c1,1\n6,\"c\"\"2\",1\n7,c3,1");  // no trailing newline
  dir.write("d.csv", "");
  dir.write("e.csv", std::string(kHeader) + "e1,1,1,,\n\"unterminated,1,1,,\ne3,1,1,,\n");
  expect_exact_resume(dir.path(), Format::kCsv, 8);
}

TEST(FileSource, JsonlFolderResumesExactlyAtEverySplitPoint) {
  TempDir dir;
  dir.write("a.jsonl", "{\"transaction_id\":\"a1\",\"amount\":1234567890.12}\r\n\n{\"transaction_id\":\"a2\"}\n");
  dir.write("b.ndjson", "not json\n{\"transaction_id\":\"b2\",\"amount\":1e3}");
  dir.write("c.jsonl", "");
  dir.write("d.jsonl", "\n\n{\"transaction_id\":\"d1\",\"x\":[[{}]]}\n[1]\n");
  expect_exact_resume(dir.path(), Format::kJsonl, 6);
}

TEST(FileSource, SingleFileResumesExactlyAndNamesItselfByBasename) {
  TempDir dir;
  const fs::path file = dir.write("only.csv", csv({"t1", "t2", "t3"}));
  FileSource source(file, Format::kCsv);
  EXPECT_EQ(source.identity(), fs::canonical(file).string());
  std::vector<DecodedRecord> batch;
  ASSERT_EQ(source.read(batch, 1), 1u);
  EXPECT_EQ(source.position().text, (FilePosition{"only.csv", kHeader.size() + 12}.to_position().text));
  expect_exact_resume(file, Format::kCsv, 3);
}

TEST(FileSource, IdentityIsTheCanonicalAbsolutePathOfTheFolder) {
  TempDir dir;
  fs::create_directory(dir.path() / "in");
  FileSource source(dir.path() / "in" / ".." / "in", Format::kCsv);
  EXPECT_EQ(source.identity(), fs::canonical(dir.path() / "in").string());
  EXPECT_TRUE(fs::path(source.identity()).is_absolute());
}

TEST(FileSource, SeekSkipsEarlierFilesAndResumesInsideTheNamedOne) {
  TempDir dir;
  dir.write("a.csv", csv({"a1"}));
  dir.write("b.csv", csv({"b1", "b2"}));
  dir.write("c.csv", csv({"c1"}));
  FileSource source(dir.path(), Format::kCsv);
  source.seek(FilePosition{"b.csv", kHeader.size() + 12});
  const auto records = read_all(source);
  EXPECT_EQ(ids_of(records), (std::vector<std::string>{"b2", "c1"}));
  EXPECT_EQ(records[0].position.line, 3u);
  EXPECT_EQ(records[0].position.offset, kHeader.size() + 12);
}

TEST(FileSource, SeekToTheEndOfAFileContinuesWithTheNext) {
  TempDir dir;
  dir.write("a.csv", csv({"a1"}));
  dir.write("b.csv", csv({"b1"}));
  FileSource source(dir.path(), Format::kCsv);
  source.seek(FilePosition{"a.csv", fs::file_size(dir.path() / "a.csv")});
  EXPECT_EQ(ids_of(read_all(source)), (std::vector<std::string>{"b1"}));
}

TEST(FileSource, SeekToAVanishedFileContinuesWithTheNextNameAfterIt) {
  TempDir dir;
  dir.write("a.csv", csv({"a1"}));
  dir.write("c.csv", csv({"c1"}));
  FileSource source(dir.path(), Format::kCsv);
  source.seek(FilePosition{"b.csv", 123});
  EXPECT_EQ(source.position().text, (FilePosition{"b.csv", 123}.to_position().text));
  EXPECT_EQ(ids_of(read_all(source)), (std::vector<std::string>{"c1"}));

  FileSource past_all(dir.path(), Format::kCsv);
  past_all.seek(FilePosition{"z.csv", 0});
  EXPECT_TRUE(read_all(past_all).empty());
}

TEST(FileSource, SeekToOffsetZeroOrInsideTheHeaderReadsTheWholeFile) {
  TempDir dir;
  dir.write("a.csv", csv({"a1", "a2"}));
  for (std::uint64_t offset : {std::uint64_t{0}, std::uint64_t{5}}) {
    FileSource source(dir.path(), Format::kCsv);
    source.seek(FilePosition{"a.csv", offset});
    const auto records = read_all(source);
    EXPECT_EQ(ids_of(records), (std::vector<std::string>{"a1", "a2"}));
    EXPECT_EQ(records[0].position.line, 2u);
  }
}

TEST(FileSource, FilesLargerThanTheReadChunkStream) {
  TempDir dir;
  std::string text(kHeader);
  for (int i = 0; i < 5000; ++i) text += "t" + std::to_string(i) + ",1,\"1,00\",acc,\n";
  dir.write("big.csv", text);
  FileSource source(dir.path() / "big.csv", Format::kCsv, 4096);
  const auto records = read_all(source, 777);
  ASSERT_EQ(records.size(), 5000u);
  EXPECT_EQ(records[4999].field(pipeline::built_in_field::kTransactionId)->text, "t4999");
  EXPECT_EQ(records[4999].position.line, 5001u);
  EXPECT_EQ(records[4999].position.end_offset, text.size());
}

TEST(FileSource, MissingPathThrowsSourceErrorNamingIt) {
  TempDir dir;
  const fs::path missing = dir.path() / "nope.csv";
  try {
    FileSource source(missing, Format::kCsv);
    FAIL() << "no exception";
  } catch (const pipeline::SourceError& error) {
    EXPECT_NE(std::string(error.what()).find(missing.string()), std::string::npos) << error.what();
  }
  EXPECT_THROW(open_file_source(missing, Format::kJsonl), pipeline::SourceError);
}

TEST(FileSource, FileRemovedBeforeItIsOpenedThrowsSourceError) {
  TempDir dir;
  dir.write("a.csv", csv({"a1"}));
  FileSource source(dir.path(), Format::kCsv);
  fs::remove(dir.path() / "a.csv");
  std::vector<DecodedRecord> batch;
  EXPECT_THROW(source.read(batch, 10), pipeline::SourceError);
}

TEST(FileSource, EmptyFolderHasNoRecords) {
  TempDir dir;
  const auto source = open_file_source(dir.path(), Format::kJsonl);
  std::vector<DecodedRecord> batch;
  EXPECT_EQ(source->read(batch, 10), 0u);
  EXPECT_EQ(source->position().text, FilePosition{}.to_position().text);
}

TEST(FileSource, AFifoIsRefusedAtOnceAsASourceAndPassedOverInAFolder) {
  TempDir dir;
  // Opening a FIFO without a writer would block the run, and its signals, in open().
  ASSERT_EQ(::mkfifo((dir.path() / "pipe.csv").c_str(), 0600), 0);
  try {
    FileSource source(dir.path() / "pipe.csv", Format::kCsv);
    FAIL() << "no exception";
  } catch (const pipeline::SourceError& error) {
    EXPECT_NE(std::string(error.what()).find("not a regular file"), std::string::npos) << error.what();
  }
  dir.write("a.csv", csv({"a1"}));
  FileSource folder(dir.path(), Format::kCsv);
  EXPECT_EQ(ids_of(read_all(folder)), std::vector<std::string>{"a1"});
  EXPECT_EQ(folder.seen_files(), std::vector<std::string>{"a.csv"});
}

// --- the registry of files read ------------------------------------------------

TEST(FileSource, MarksSayWhatTheRecordsReturnedReadOfEachFile) {
  TempDir dir;
  const fs::path a = dir.write("a.csv", csv({"a1", "a2"}));
  dir.write("b.csv", csv({"b1"}));
  FileSource source(dir.path(), Format::kCsv);
  std::vector<DecodedRecord> batch;
  ASSERT_EQ(source.read(batch, 1), 1u);
  std::vector<pipeline::FileMark> marks = source.take_marks();
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_EQ(marks[0].file, "a.csv");
  EXPECT_EQ(marks[0].bytes, batch[0].position.end_offset);
  struct stat status {};
  ASSERT_EQ(::stat(a.c_str(), &status), 0);
  EXPECT_EQ(marks[0].device, static_cast<std::uint64_t>(status.st_dev));
  EXPECT_EQ(marks[0].inode, static_cast<std::uint64_t>(status.st_ino));
  EXPECT_EQ(marks[0].fingerprint, ReadOnlyFile(a).fingerprint(marks[0].bytes));
  EXPECT_TRUE(source.take_marks().empty());  // nothing read since
  batch.clear();
  ASSERT_EQ(source.read(batch, 10), 2u);
  marks = source.take_marks();
  ASSERT_EQ(marks.size(), 2u);
  EXPECT_EQ(marks[0].file, "a.csv");
  EXPECT_EQ(marks[0].bytes, csv({"a1", "a2"}).size());
  EXPECT_EQ(marks[1].file, "b.csv");
  EXPECT_EQ(marks[1].bytes, csv({"b1"}).size());
}

TEST(FileSource, WithItsRegistryASourceReadsOnAGrownFileSkipsAnUnchangedOneAndRereadsAChangedOne) {
  TempDir dir;
  dir.write("a.csv", csv({"a1"}));
  dir.write("b.csv", csv({"b1"}));
  dir.write("c.csv", csv({"c1"}));
  std::vector<pipeline::FileMark> registry;
  {
    FileSource first(dir.path(), Format::kCsv);
    read_all(first);
    registry = first.take_marks();
  }
  dir.write("a.csv", csv({"a1", "a2"}));  // grew
  dir.write("c.csv", csv({"x1"}));        // rewritten in place, as long as before
  FileSource next(dir.path(), Format::kCsv);
  next.restore_marks(registry);
  next.seek(FilePosition{"c.csv", csv({"c1"}).size()});
  ASSERT_EQ(next.changed_files().size(), 1u);
  EXPECT_EQ(next.changed_files()[0].file, "c.csv");
  EXPECT_NE(next.changed_files()[0].change.find("rewritten"), std::string::npos);
  EXPECT_EQ(ids_of(read_all(next)), (std::vector<std::string>{"a2", "x1"}));
}

TEST(FileSource, FingerprintCoversTheFirstAndTheLastKibibyteBeforeTheOffsetAndTheOffset) {
  TempDir dir;
  std::string text(4096, 'x');
  const fs::path file = dir.write("f.csv", text);
  const std::string whole = ReadOnlyFile(file).fingerprint(4096);
  EXPECT_EQ(whole.size(), 64u);
  EXPECT_NE(ReadOnlyFile(file).fingerprint(4095), whole);  // the length counts
  text[2048] = 'y';                                         // between the two ends: not seen
  dir.write("f.csv", text);
  EXPECT_EQ(ReadOnlyFile(file).fingerprint(4096), whole);
  text[4000] = 'y';  // in the KiB before the offset
  dir.write("f.csv", text);
  EXPECT_NE(ReadOnlyFile(file).fingerprint(4096), whole);
}

// --- positions and decode contexts, opaque to the pipeline --------------------

TEST(FilePosition, TextEscapesTheNameAndParsesBackAndTheEmptyTextIsTheStart) {
  const FilePosition position{"b\xe9:1.csv", 42};  // a Latin-1 name with a ':' in it
  EXPECT_EQ(position.to_position().text, "b\\xe9:1.csv:42");
  EXPECT_EQ(FilePosition::parse(position.to_position()), position);
  EXPECT_EQ(FilePosition::parse(Position{}), FilePosition{});
  for (const char* garbage : {"no-colon", "a.csv:", "a.csv:12x", "a.csv:-1"}) {
    EXPECT_FALSE(FilePosition::parse(Position{garbage}).has_value()) << garbage;
  }
}

TEST(FileSource, OrdersPositionsByTheBytesOfFileNamesThenByOffset) {
  TempDir dir;
  FileSource source(dir.path(), Format::kCsv);
  const auto at = [](std::string file, std::uint64_t offset) { return FilePosition{std::move(file), offset}.to_position(); };
  EXPECT_TRUE(source.precedes(at("a.csv", 10), at("a.csv", 11)));
  EXPECT_FALSE(source.precedes(at("a.csv", 11), at("a.csv", 11)));
  EXPECT_FALSE(source.precedes(at("a.csv", 11), at("a.csv", 10)));
  EXPECT_TRUE(source.precedes(at("a.csv", 999), at("b.csv", 0)));
  EXPECT_TRUE(source.precedes(Position{}, at("a.csv", 0)));
  // By the names' bytes, not by their stored text: UTF-8 "é" (C3 A9) sorts before the
  // Latin-1 byte FF, though its text sorts after the escaped "\\xff".
  EXPECT_TRUE(source.precedes(at("a\xc3\xa9.csv", 5), at("a\xff.csv", 1)));
  EXPECT_GT(at("a\xc3\xa9.csv", 5).text, at("a\xff.csv", 1).text);
  EXPECT_THROW(source.precedes(Position{"not a position"}, at("a.csv", 0)), pipeline::SourceError);
}

TEST(FileSource, SeekToATextThatIsNoFilePositionFailsNamingIt) {
  TempDir dir;
  FileSource source(dir.path(), Format::kCsv);
  try {
    source.seek(Position{"stream-7"});
    ADD_FAILURE() << "seek accepted a position that is not file:offset";
  } catch (const pipeline::SourceError& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("'stream-7'"));
  }
}

TEST(FileSource, CsvRecordsCarryTheirFilesHeaderLineAsDecodeContextAndJsonLinesNone) {
  TempDir dir;
  dir.write("a.csv", csv({"a1", "a2"}));
  dir.write("b.csv", "amount,transaction_id,source_revision\r\n1.00,b1,1\r\n");
  FileSource csv_source(dir.path(), Format::kCsv);
  EXPECT_EQ(csv_source.format(), "csv");
  const auto records = read_all(csv_source);
  ASSERT_EQ(records.size(), 3u);
  ASSERT_NE(records[0].decode_context, nullptr);
  EXPECT_EQ(*records[0].decode_context, kHeader.substr(0, kHeader.size() - 1));
  EXPECT_EQ(records[0].decode_context, records[1].decode_context);  // one header, shared
  ASSERT_NE(records[2].decode_context, nullptr);
  EXPECT_EQ(*records[2].decode_context, "amount,transaction_id,source_revision");

  const fs::path jsonl = dir.write("c.jsonl", "{\"transaction_id\":\"j1\"}\n");
  FileSource jsonl_source(jsonl, Format::kJsonl);
  EXPECT_EQ(jsonl_source.format(), "jsonl");
  const auto lines = read_all(jsonl_source);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].decode_context, nullptr);
}

TEST(FileSource, ResumingInsideACsvFileStillGivesItsRecordsTheHeaderLine) {
  TempDir dir;
  dir.write("a.csv", csv({"a1", "a2"}));
  FileSource source(dir.path(), Format::kCsv);
  source.seek(FilePosition{"a.csv", kHeader.size() + 12});
  const auto records = read_all(source);
  ASSERT_EQ(ids_of(records), (std::vector<std::string>{"a2"}));
  ASSERT_NE(records[0].decode_context, nullptr);
  EXPECT_EQ(*records[0].decode_context, kHeader.substr(0, kHeader.size() - 1));
}

// --- a last line without a newline -----------------------------------

constexpr std::chrono::hours kLongSettle{1};  // a fresh file cannot settle during the test
constexpr std::string_view kGrowingHeader = "transaction_id,source_revision,account_id,amount\n";
const std::string kGrowing = std::string(kGrowingHeader) + "W-1,1,ACC-W,1.00\nW-2,1,ACC-W,12";  // on its way to 1234.50

TEST(FileSource, UnterminatedLastLineOfAFileStillBeingWrittenIsNotARecord) {
  TempDir dir;
  const fs::path file = dir.write_fresh("in.csv", kGrowing);
  FileSource source(file, Format::kCsv, FileSource::kDefaultChunkBytes, kLongSettle);
  const auto records = read_all(source);
  EXPECT_EQ(ids_of(records), (std::vector<std::string>{"W-1"}));
  EXPECT_EQ(source.position().text, (FilePosition{"in.csv", kGrowingHeader.size() + 17}.to_position().text));
  EXPECT_EQ(source.pending_tail_bytes(), std::string("W-2,1,ACC-W,12").size());
}

TEST(FileSource, UnterminatedLastLineIsReadOnceTheFileHasSettled) {
  TempDir dir;
  const fs::path file = dir.write_fresh("in.csv", kGrowing);
  fs::last_write_time(file, fs::file_time_type::clock::now() - 2 * kLongSettle);
  FileSource source(file, Format::kCsv, FileSource::kDefaultChunkBytes, kLongSettle);
  const auto records = read_all(source);
  ASSERT_EQ(ids_of(records), (std::vector<std::string>{"W-1", "W-2"}));
  EXPECT_EQ(records[1].field(pipeline::built_in_field::kAmount)->text, "12");
  EXPECT_EQ(source.position().text, (FilePosition{"in.csv", kGrowing.size()}.to_position().text));
  EXPECT_EQ(source.pending_tail_bytes(), 0u);
}

TEST(FileSource, ZeroSettleReadsAnUnterminatedLastLineAtOnce) {
  TempDir dir;
  const fs::path file = dir.write_fresh("in.jsonl", "{\"transaction_id\":\"j1\"}\n{\"transaction_id\":\"j2\"}");
  FileSource source(file, Format::kJsonl, FileSource::kDefaultChunkBytes, std::chrono::milliseconds(0));
  EXPECT_EQ(ids_of(read_all(source)), (std::vector<std::string>{"j1", "j2"}));
  EXPECT_EQ(source.pending_tail_bytes(), 0u);
}

TEST(FileSource, PendingLastLineHoldsBackLaterFilesAndTheNextReadCompletesIt) {
  TempDir dir;
  dir.write_fresh("a.csv", kGrowing);
  dir.write("b.csv", csv({"b1"}));
  FileSource first(dir.path(), Format::kCsv, FileSource::kDefaultChunkBytes, kLongSettle);
  EXPECT_EQ(ids_of(read_all(first)), (std::vector<std::string>{"W-1"}));  // b.csv must wait: the checkpoint
  const Position checkpoint = first.position();                          // may not pass a.csv's last line

  // The writer finishes the line; the next run resumes at the checkpoint and reads it whole.
  std::ofstream(dir.path() / "a.csv", std::ios::binary | std::ios::app) << "34.50\n";
  FileSource second(dir.path(), Format::kCsv, FileSource::kDefaultChunkBytes, kLongSettle);
  second.seek(checkpoint);
  const auto records = read_all(second);
  ASSERT_EQ(ids_of(records), (std::vector<std::string>{"W-2", "b1"}));
  EXPECT_EQ(records[0].field(pipeline::built_in_field::kAmount)->text, "1234.50");
  EXPECT_EQ(second.pending_tail_bytes(), 0u);
}

TEST(FileSource, HalfWrittenHeaderIsNotAHeader) {
  TempDir dir;
  dir.write_fresh("a.csv", "transaction_id,source_rev");
  FileSource source(dir.path(), Format::kCsv, FileSource::kDefaultChunkBytes, kLongSettle);
  EXPECT_TRUE(read_all(source).empty());
  EXPECT_EQ(source.pending_tail_bytes(), std::string("transaction_id,source_rev").size());
}

// --- unusable files fail fast -----------------------------------------

std::string error_of(pipeline::Source& source, std::vector<DecodedRecord>& out) {
  try {
    while (source.read(out, 1000) > 0) {
    }
  } catch (const pipeline::SourceError& error) {
    return error.what();
  }
  return "no error";
}

TEST(FileSource, CsvHeaderWithoutARequiredColumnFailsBeforeAnyOfItsRecords) {
  TempDir dir;
  dir.write("a.csv", csv({"a1"}));
  dir.write("b.csv", "transaction_id,revision,account_id\nb1,1,x\n");
  dir.write("c.csv", csv({"c1"}));
  FileSource source(dir.path(), Format::kCsv);
  std::vector<DecodedRecord> records;
  const std::string error = error_of(source, records);
  EXPECT_THAT(error, ::testing::HasSubstr("b.csv"));
  EXPECT_THAT(error, ::testing::HasSubstr("source_revision, amount"));
  EXPECT_EQ(ids_of(records), (std::vector<std::string>{"a1"}));  // what came before, nothing of b.csv
  EXPECT_EQ(FilePosition::parse(source.position())->file, "a.csv");
}

TEST(FileSource, FileWhoseFirstHundredRecordsAllFailToDecodeFailsNamingTheFormat) {
  TempDir dir;
  std::string text(kHeader);
  for (std::size_t i = 0; i < kFormatProbeRecords; ++i) text += "t" + std::to_string(i) + ",1,1.00,,\n";
  dir.write("in.csv", text);
  FileSource source(dir.path() / "in.csv", Format::kJsonl);  // a CSV read as JSON Lines
  std::vector<DecodedRecord> records;
  const std::string error = error_of(source, records);
  EXPECT_THAT(error, ::testing::HasSubstr("in.csv"));
  EXPECT_THAT(error, ::testing::HasSubstr("jsonl"));
  EXPECT_TRUE(records.empty());
}

TEST(FileSource, BadRecordsBeforeTheHundredthGoodOneAreReturnedInOrder) {
  TempDir dir;
  std::string text;
  for (std::size_t i = 0; i + 1 < kFormatProbeRecords; ++i) text += "not json\n";
  text += "{\"transaction_id\":\"good\"}\n";
  dir.write("in.jsonl", text);
  FileSource source(dir.path() / "in.jsonl", Format::kJsonl);
  const auto records = read_all(source, 7);
  ASSERT_EQ(records.size(), kFormatProbeRecords);
  EXPECT_TRUE(records[0].decode_error.has_value());
  EXPECT_EQ(records.back().field(pipeline::built_in_field::kTransactionId)->text, "good");
  EXPECT_EQ(source.position().text, (FilePosition{"in.jsonl", text.size()}.to_position().text));
}

TEST(FileSource, FormatProbeHoldsAtMostItsByteBudgetOfUndecodableLines) {
  TempDir dir;
  // Two undecodable lines fill the probe's byte budget: it stops there, so the file is read
  // (its lines quarantined one by one) instead of failing or holding 100 such lines.
  const std::string big(kFormatProbeBytes / 2, 'x');
  std::string text = big + "\n" + big + "\n";
  for (std::size_t i = 2; i < kFormatProbeRecords; ++i) text += "not json\n";
  dir.write("in.jsonl", text);
  FileSource source(dir.path() / "in.jsonl", Format::kJsonl);
  std::vector<DecodedRecord> records;
  EXPECT_EQ(error_of(source, records), "no error");
  EXPECT_EQ(records.size(), kFormatProbeRecords);
}

// --- batches bounded by bytes -----------------------------------------

TEST(FileSource, ReadStopsBeforeTheRecordsRawBytesPassMaxBytesAndNeverReturnsLessThanOne) {
  TempDir dir;
  // Raw sizes (without the newline): 11, 11, 26, 11, 11.
  dir.write("in.csv", std::string(kHeader) + "t1,1,1.00,,\nt2,1,1.00,,\nt3-long-id-xxxxxx,1,1.00,,\nt4,1,1.00,,\nt5,1,1.00,,\n");
  FileSource source(dir.path() / "in.csv", Format::kCsv);
  std::vector<std::size_t> sizes;
  std::vector<std::string> ids;
  for (std::vector<DecodedRecord> batch; source.read(batch, 100, 22) > 0; batch.clear()) {
    sizes.push_back(batch.size());
    for (const auto& id : ids_of(batch)) ids.push_back(id);
    EXPECT_EQ(FilePosition::parse(source.position())->offset, batch.back().position.end_offset);
  }
  // t1+t2 = 22 bytes; t3 alone is over the limit; t4+t5 = 22.
  EXPECT_EQ(sizes, (std::vector<std::size_t>{2, 1, 2}));
  EXPECT_EQ(ids, (std::vector<std::string>{"t1", "t2", "t3-long-id-xxxxxx", "t4", "t5"}));

  FileSource by_count(dir.path() / "in.csv", Format::kCsv);
  std::vector<DecodedRecord> batch;
  EXPECT_EQ(by_count.read(batch, 1, 22), 1u);  // whichever limit comes first
}

TEST(FileFormat, ParsesNamesAndExtensions) {
  EXPECT_EQ(parse_format("csv"), Format::kCsv);
  EXPECT_EQ(parse_format("jsonl"), Format::kJsonl);
  EXPECT_EQ(parse_format("json"), std::nullopt);
  EXPECT_EQ(parse_format("CSV"), std::nullopt);
  EXPECT_EQ(format_from_extension("in/data.csv"), Format::kCsv);
  EXPECT_EQ(format_from_extension("data.jsonl"), Format::kJsonl);
  EXPECT_EQ(format_from_extension("data.ndjson"), Format::kJsonl);
  EXPECT_EQ(format_from_extension("data.json"), std::nullopt);
  EXPECT_EQ(format_from_extension("data"), std::nullopt);
  EXPECT_EQ(format_from_extension("data.csv.gz"), std::nullopt);
}

}  // namespace
}  // namespace tidemark::connectors::file
