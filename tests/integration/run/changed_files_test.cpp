// Inputs that change under a pipeline (docs/sources.md "Files that change"): a file
// rewritten, truncated, replaced or rotated after a run read it is read again from its start,
// never skipped; one that only grew is read on from where it stopped. Each test ends with the
// table holding, for every key given, the highest revision any version of the files carried
// (what one clean run over each version in turn leaves), and no change twice in the outbox.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "connectors/file/file_source.hpp"
#include "pipeline/run/run_controller.hpp"
#include "pipeline/core/source.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::pipeline {
namespace {

using testing::counts_text;
using testing::file_request;
using testing::query_rows;
using testing::Rows;
using testing::TempDir;
using testing::TestDatabase;
using ::testing::HasSubstr;

constexpr char kHeader[] = "transaction_id,source_revision,amount,account_id\n";

struct Tx {
  std::string key;
  int revision = 1;
  std::string amount;
};

std::string lines(const std::vector<Tx>& records) {
  std::string text;
  for (const Tx& tx : records) text += tx.key + "," + std::to_string(tx.revision) + "," + tx.amount + ",acct\n";
  return text;
}

std::string csv(const std::vector<Tx>& records) { return kHeader + lines(records); }

class ChangedFilesTest : public ::testing::Test {
 protected:
  // Writes `name` over the file that has it, in place (the same inode), and remembers its records.
  void write(const std::string& name, const std::vector<Tx>& records) {
    std::ofstream(dir_.path() / name, std::ios::binary | std::ios::trunc) << csv(records);
    given(records);
  }
  // Writes `name` as a new file renamed over the old one (a new inode), as atomic writers do.
  void replace(const std::string& name, const std::vector<Tx>& records) {
    const auto temporary = dir_.path() / (name + ".partial");
    std::ofstream(temporary, std::ios::binary) << csv(records);
    std::filesystem::rename(temporary, dir_.path() / name);
    given(records);
  }
  void append(const std::string& name, const std::vector<Tx>& records) {
    dir_.append(name, lines(records));
    given(records);
  }
  void given(const std::vector<Tx>& records) {
    for (const Tx& tx : records) {
      auto& highest = expected_[tx.key];
      if (tx.revision >= highest.first) highest = {tx.revision, tx.amount};
    }
  }

  RunSummary run(std::size_t batch_size = 2, connectors::file::ChangePolicy policy = connectors::file::ChangePolicy::kReread) {
    RunRequest request = file_request(db_, "p", dir_.path(), batch_size);
    const auto folder = dir_.path();
    request.open_source = [folder, policy] {
      return connectors::file::open_file_source(folder, connectors::file::Format::kCsv,
                                                connectors::file::kDefaultSettle, connectors::file::built_in_layout(),
                                                policy);
    };
    return run_pipeline(request);
  }

  static std::vector<std::string> names(const RunSummary& summary) {
    std::vector<std::string> files;
    for (const ChangedFile& changed : summary.rewritten_files) files.push_back(changed.file);
    return files;
  }

  // The table as one clean run over every version given leaves it, and each change of a key
  // once in the outbox: one event per (key, revision) the table took.
  void expect_clean_effects() {
    Rows expected;
    for (const auto& [key, highest] : expected_) {
      expected.push_back({key, std::to_string(highest.first), highest.second});
    }
    EXPECT_EQ(query_rows(db_, "SELECT transaction_id, source_revision, amount FROM transaction_state ORDER BY 1"),
              expected);
    EXPECT_EQ(query_rows(db_, "SELECT payload->>'transaction_id', payload->>'source_revision', count(*) FROM outbox "
                              "GROUP BY 1, 2 HAVING count(*) > 1"),
              Rows{});
  }

  std::string outbox_count() const { return db_.scalar("SELECT count(*) FROM outbox"); }

  TestDatabase db_;
  TempDir dir_;
  std::map<std::string, std::pair<int, std::string>> expected_;  // key -> (revision, amount)
};

TEST_F(ChangedFilesTest, AFileRewrittenLongerInPlaceIsReadAgainAndWhatWasAddedIsLoaded) {
  write("t.csv", {{"A", 1, "1.00"}, {"B", 1, "2.00"}, {"C", 1, "3.00"}});
  EXPECT_EQ(counts_text(run().counts), "inserted 3");
  // The issue's own case: D was lost, E loaded from the middle of the new content.
  write("t.csv", {{"A", 1, "1.00"}, {"C", 1, "3.00"}, {"D", 1, "4.00"}, {"E", 1, "5.00"}});
  const RunSummary again = run();
  EXPECT_EQ(names(again), std::vector<std::string>{"t.csv"});
  EXPECT_THAT(again.rewritten_files.at(0).change, HasSubstr("rewritten"));
  EXPECT_EQ(counts_text(again.counts), "inserted 2, unchanged 2");
  EXPECT_EQ(db_.scalar("SELECT rewritten_files FROM runs ORDER BY id DESC LIMIT 1"), "1");
  expect_clean_effects();
}

TEST_F(ChangedFilesTest, AFileRewrittenShorterThenAppendedIsReadFromItsStartThenOnFromWhereItStopped) {
  write("t.csv", {{"A", 1, "1.00"}, {"B", 1, "2.00"}, {"C", 1, "3.00"}});
  run();
  write("t.csv", {{"F", 1, "6.00"}});
  const RunSummary shorter = run();
  EXPECT_THAT(shorter.rewritten_files.at(0).change, HasSubstr("truncated"));
  EXPECT_EQ(counts_text(shorter.counts), "inserted 1");
  append("t.csv", {{"G", 1, "7.00"}, {"A", 2, "1.50"}});
  const RunSummary grown = run();
  EXPECT_TRUE(grown.rewritten_files.empty());
  // Only the appended lines: read from the end of F's line, not from the middle of one.
  EXPECT_EQ(counts_text(grown.counts), "inserted 1, updated 1");
  expect_clean_effects();
}

TEST_F(ChangedFilesTest, AFileTruncatedToNothingIsRegisteredEmptyOnceAndItsRefillIsLoaded) {
  write("t.csv", {{"A", 1, "1.00"}, {"B", 1, "2.00"}});
  run();
  std::ofstream(dir_.path() / "t.csv", std::ios::trunc).close();
  const RunSummary emptied = run();
  EXPECT_EQ(names(emptied), std::vector<std::string>{"t.csv"});
  EXPECT_EQ(emptied.batches, 0u);
  // Registered empty by the run that found it so: the next run does not report it again.
  EXPECT_TRUE(run().rewritten_files.empty());
  write("t.csv", {{"C", 1, "3.00"}, {"B", 2, "2.50"}});
  const RunSummary refilled = run();
  EXPECT_EQ(counts_text(refilled.counts), "inserted 1, updated 1");
  expect_clean_effects();
}

TEST_F(ChangedFilesTest, ARotatedFileIsNotReadUnderItsNewNameAndTheNewFileUnderTheOldNameIsReadWhole) {
  write("t.csv", {{"A", 1, "1.00"}, {"B", 1, "2.00"}});
  run();
  // Rotation: t.csv -> t.csv.1 (no longer a .csv file of the folder), a new t.csv.
  std::filesystem::rename(dir_.path() / "t.csv", dir_.path() / "t.csv.1");
  write("t.csv", {{"C", 1, "3.00"}, {"D", 1, "4.00"}, {"E", 1, "5.00"}});
  const RunSummary rotated = run();
  EXPECT_EQ(names(rotated), std::vector<std::string>{"t.csv"});
  EXPECT_THAT(rotated.rewritten_files.at(0).change, HasSubstr("replaced"));
  EXPECT_EQ(counts_text(rotated.counts), "inserted 3");
  expect_clean_effects();
}

TEST_F(ChangedFilesTest, ASameSizeReplacementUnderTheSameNameIsReadWhetherRenamedOverOrWrittenInPlace) {
  write("day.csv", {{"A", 1, "1.00"}, {"B", 1, "2.00"}});
  run();
  // The next day's export, byte for byte as long, renamed over the old one...
  replace("day.csv", {{"C", 1, "3.00"}, {"D", 1, "4.00"}});
  EXPECT_EQ(counts_text(run().counts), "inserted 2");
  // ...and the day after, written in place over it.
  write("day.csv", {{"E", 1, "5.00"}, {"F", 1, "6.00"}});
  const RunSummary in_place = run();
  EXPECT_THAT(in_place.rewritten_files.at(0).change, HasSubstr("rewritten"));
  EXPECT_EQ(counts_text(in_place.counts), "inserted 2");
  expect_clean_effects();
}

TEST_F(ChangedFilesTest, AnEarlierFileOfTheFolderReplacedAfterTheCheckpointPassedItIsReadAgain) {
  write("a.csv", {{"A", 1, "1.00"}});
  write("b.csv", {{"B", 1, "2.00"}});
  run();
  EXPECT_EQ(db_.scalar("SELECT position FROM checkpoint"), "b.csv:" + std::to_string(csv({{"B", 1, "2.00"}}).size()));
  replace("a.csv", {{"A", 2, "1.10"}, {"Z", 1, "9.00"}});
  const RunSummary again = run();
  EXPECT_EQ(names(again), std::vector<std::string>{"a.csv"});
  EXPECT_EQ(counts_text(again.counts), "inserted 1, updated 1");
  // A new file whose name sorts before the checkpoint is read too.
  write("0.csv", {{"Y", 1, "8.00"}});
  EXPECT_EQ(counts_text(run().counts), "inserted 1");
  expect_clean_effects();
}

TEST_F(ChangedFilesTest, AnIdenticalRewriteAppliesNothingAgain) {
  const std::vector<Tx> records = {{"A", 1, "1.00"}, {"B", 1, "2.00"}};
  write("t.csv", records);
  run();
  const std::string events = outbox_count();
  write("t.csv", records);  // in place: the same bytes, so nothing to read
  const RunSummary in_place = run();
  EXPECT_TRUE(in_place.rewritten_files.empty());
  EXPECT_EQ(in_place.counts.input(), 0u);
  replace("t.csv", records);  // a new file with the same bytes: read again, all unchanged
  const RunSummary renamed = run();
  EXPECT_EQ(names(renamed), std::vector<std::string>{"t.csv"});
  EXPECT_EQ(counts_text(renamed.counts), "unchanged 2");
  EXPECT_EQ(outbox_count(), events);
  expect_clean_effects();
}

TEST_F(ChangedFilesTest, AFileThatOnlyGrewIsReadOnFromWhereItStoppedNotAgain) {
  write("t.csv", {{"A", 1, "1.00"}, {"B", 1, "2.00"}, {"C", 1, "3.00"}});
  run();
  append("t.csv", {{"D", 1, "4.00"}});
  const RunSummary grown = run();
  EXPECT_TRUE(grown.rewritten_files.empty());
  EXPECT_EQ(counts_text(grown.counts), "inserted 1");
  // Unchanged since: the next run reads nothing.
  EXPECT_EQ(run().counts.input(), 0u);
  expect_clean_effects();
}

TEST_F(ChangedFilesTest, UnderTheFailPolicyAChangedFileFailsTheRunNamingItAndNothingOfItIsLoaded) {
  write("a.csv", {{"A", 1, "1.00"}});
  write("b.csv", {{"B", 1, "2.00"}});
  run();
  write("a.csv", {{"N", 1, "5.00"}});  // as long as before, other bytes
  append("b.csv", {{"C", 1, "3.00"}});
  try {
    run(2, connectors::file::ChangePolicy::kFail);
    FAIL() << "the run should fail at the changed file";
  } catch (const SourceError& error) {
    EXPECT_THAT(error.what(), HasSubstr("'a.csv' changed since an earlier run read it"));
    EXPECT_THAT(error.what(), HasSubstr("on_change is fail"));
  }
  // Nothing of a.csv, nor of what comes after it.
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM transaction_state WHERE transaction_id IN ('N', 'C')"), "0");
  EXPECT_EQ(db_.scalar("SELECT status FROM runs ORDER BY id DESC LIMIT 1"), "failed");
  // The default policy then reads it again, and b.csv on.
  const RunSummary reread = run();
  EXPECT_EQ(names(reread), std::vector<std::string>{"a.csv"});
  EXPECT_EQ(counts_text(reread.counts), "inserted 2");
  expect_clean_effects();
}

TEST_F(ChangedFilesTest, ARunMarksTheFilesItFindsAsSeenSoThatRetentionPrunesOnlyThoseThatAreGone) {
  write("a.csv", {{"A", 1, "1.00"}});
  write("b.csv", {{"B", 1, "2.00"}});
  run();
  db_.scalar("UPDATE tidemark_source_files SET seen_at = now() - interval '2 days'");
  std::filesystem::remove(dir_.path() / "b.csv");
  EXPECT_EQ(run().counts.input(), 0u);  // a file that disappears is not an error
  EXPECT_EQ(query_rows(db_, "SELECT file, seen_at > now() - interval '1 hour' FROM tidemark_source_files ORDER BY 1"),
            (Rows{{"a.csv", "t"}, {"b.csv", "f"}}));
}

TEST_F(ChangedFilesTest, ARunFromBeforeTheRegistryRegistersWhatItsCheckpointHadPassedWithoutReadingItAgain) {
  write("a.csv", {{"A", 1, "1.00"}});
  write("b.csv", {{"B", 1, "2.00"}});
  run();
  // As a pipeline upgraded from a version without the registry: a checkpoint and no files.
  db_.scalar("DELETE FROM tidemark_source_files");
  append("b.csv", {{"C", 1, "3.00"}});
  const RunSummary upgraded = run();
  EXPECT_EQ(counts_text(upgraded.counts), "inserted 1");
  EXPECT_EQ(query_rows(db_, "SELECT file FROM tidemark_source_files ORDER BY file"), (Rows{{"a.csv"}, {"b.csv"}}));
  replace("a.csv", {{"A", 2, "1.10"}});
  EXPECT_EQ(counts_text(run().counts), "updated 1");
  expect_clean_effects();
}

}  // namespace
}  // namespace tidemark::pipeline
