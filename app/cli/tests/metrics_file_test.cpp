// `run --metrics-file`: the exposition text, the success time a failed run keeps,
// and the atomic replacement node_exporter's textfile collector relies on (a reader never
// sees part of a file). promtool checks a real run's file in tests/e2e/cli_logs_metrics_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "app/cli/metrics_file.hpp"

namespace tidemark::app {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class MetricsFileTest : public ::testing::Test {
 protected:
  MetricsFileTest() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tidemark-metrics-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    folder_ = pattern;
  }
  ~MetricsFileTest() override {
    std::error_code ignored;
    std::filesystem::remove_all(folder_, ignored);
  }
  std::filesystem::path folder_;
};

RunMetrics sample() {
  RunMetrics metrics;
  metrics.pipeline = "payments";
  metrics.counts[pipeline::Outcome::kInserted] = 7;
  metrics.counts[pipeline::Outcome::kConflict] = 2;
  metrics.batches = 3;
  metrics.rewritten_files = 1;
  metrics.duration_seconds = 1.25;
  metrics.exit_code = 0;
  metrics.finished_at = 1796104800.5;
  metrics.last_success_at = 1796104800.5;
  return metrics;
}

TEST_F(MetricsFileTest, TextHasEveryFamilyWithHelpTypeAndAllEightOutcomes) {
  const std::string text = metrics_text(sample());
  for (const char* name : {"tidemark_run_records", "tidemark_run_batches", "tidemark_run_rewritten_files",
                           "tidemark_run_duration_seconds",
                           "tidemark_run_exit_code", "tidemark_run_finished_timestamp_seconds",
                           "tidemark_run_last_success_timestamp_seconds"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# HELP ") + name + " ")) << name;
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + name + " gauge\n")) << name;
  }
  EXPECT_THAT(text, HasSubstr("tidemark_run_records{pipeline=\"payments\",outcome=\"inserted\"} 7\n"));
  EXPECT_THAT(text, HasSubstr("tidemark_run_records{pipeline=\"payments\",outcome=\"conflict\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("tidemark_run_records{pipeline=\"payments\",outcome=\"stale\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("tidemark_run_batches{pipeline=\"payments\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("tidemark_run_rewritten_files{pipeline=\"payments\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tidemark_run_duration_seconds{pipeline=\"payments\"} 1.250\n"));
  EXPECT_THAT(text, HasSubstr("tidemark_run_exit_code{pipeline=\"payments\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("tidemark_run_last_success_timestamp_seconds{pipeline=\"payments\"} 1796104800.500\n"));
  EXPECT_EQ(text.back(), '\n');
}

TEST_F(MetricsFileTest, LabelValuesAreEscaped) {
  RunMetrics metrics = sample();
  metrics.pipeline = "a\"b\\c\nd";
  EXPECT_THAT(metrics_text(metrics), HasSubstr("tidemark_run_batches{pipeline=\"a\\\"b\\\\c\\nd\"} 3\n"));
}

TEST_F(MetricsFileTest, AFailedRunKeepsTheLastSuccessTimeOfThePreviousFile) {
  const auto path = folder_ / "tidemark.prom";
  write_file_atomically(path, metrics_text(sample()));
  EXPECT_EQ(previous_last_success(path, "payments"), 1796104800.5);
  EXPECT_EQ(previous_last_success(path, "other"), std::nullopt);
  EXPECT_EQ(previous_last_success(folder_ / "missing.prom", "payments"), std::nullopt);

  RunMetrics never = sample();
  never.last_success_at.reset();
  EXPECT_THAT(metrics_text(never), Not(HasSubstr("tidemark_run_last_success_timestamp_seconds")));
}

TEST_F(MetricsFileTest, WriteReplacesTheFileAndLeavesNoTemporaryBehind) {
  const auto path = folder_ / "tidemark.prom";
  write_file_atomically(path, "old\n");
  write_file_atomically(path, "new\n");
  EXPECT_EQ(read_text(path), "new\n");
  std::size_t entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder_)) {
    ++entries;
    EXPECT_EQ(entry.path().filename(), "tidemark.prom");
  }
  EXPECT_EQ(entries, 1u);
}

TEST_F(MetricsFileTest, AnUnwritableFolderIsAnErrorNamingThePath) {
  const auto path = folder_ / "no-such-folder" / "tidemark.prom";
  try {
    write_file_atomically(path, "x\n");
    FAIL() << "no error";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr(path.string()));
  }
}

// A symlink planted at the temporary name the writer used (PATH.<pid>.tmp,
// the pid being this process's) made the write overwrite the link's target and rename the
// link over PATH. Now the target keeps its text and PATH is a regular file of mode 0644
// (whatever the umask: the collector, as a rule another user, must read it).
TEST_F(MetricsFileTest, APlantedSymlinkAtTheTemporaryNameIsNotWrittenThrough) {
  const auto path = folder_ / "tidemark.prom";
  const auto victim = folder_ / "victim";
  std::ofstream(victim) << "precious\n";
  const auto planted = std::filesystem::path(path.string() + "." + std::to_string(::getpid()) + ".tmp");
  std::filesystem::create_symlink(victim, planted);
  const mode_t saved_umask = ::umask(077);
  write_file_atomically(path, "new\n");
  ::umask(saved_umask);
  EXPECT_EQ(read_text(victim), "precious\n");
  EXPECT_FALSE(std::filesystem::is_symlink(path));
  EXPECT_EQ(read_text(path), "new\n");
  EXPECT_EQ(std::filesystem::status(path).permissions(),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                std::filesystem::perms::group_read | std::filesystem::perms::others_read);
  EXPECT_TRUE(std::filesystem::is_symlink(planted));  // left alone, not removed or followed
}

// A reader polling the file while it is rewritten over and over sees one whole version or the
// other, never a truncated or half-written one (a plain truncate-and-write fails this at once:
// the files are large enough that each write takes many system calls' worth of time).
TEST_F(MetricsFileTest, AReaderNeverSeesAPartialFile) {
  const auto path = folder_ / "tidemark.prom";
  const std::string first(1 << 20, 'a');
  const std::string second(1 << 19, 'b');
  write_file_atomically(path, first);
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::thread reader([&] {
    while (!done) {
      const std::string seen = read_text(path);
      ++reads;
      if (seen != first && seen != second) {
        ADD_FAILURE() << "saw a partial file of " << seen.size() << " bytes";
        return;
      }
    }
  });
  for (int i = 0; i < 40; ++i) write_file_atomically(path, i % 2 == 0 ? second : first);
  // The reader may not have been scheduled yet: give it a look at the final file at least.
  while (reads.load() < 2) std::this_thread::yield();
  done = true;
  reader.join();
}

}  // namespace
}  // namespace tidemark::app
