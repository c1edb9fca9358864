// The progress bar of a long `run` on a terminal: its text, and where a file
// source's position lies in the bytes it reads. The bar on a real terminal is tested in
// tests/e2e/cli_logs_metrics_test.cpp (through a pty).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "app/cli/progress.hpp"
#include "connectors/file/file_position.hpp"

namespace tidemark::app {
namespace {

TEST(RenderProgressTest, KnownTotalShowsBarPercentBytesRateAndEta) {
  // Half of 10 MiB read at 1 MiB/s: 5 s left.
  const std::string text = render_progress(5 << 20, 10 << 20, 1 << 20, 200);
  EXPECT_EQ(text, "[############------------]  50%  5.0 MiB / 10.0 MiB  1.0 MiB/s  ETA 0:05");
}

TEST(RenderProgressTest, EtaInHoursAndUnknownRate) {
  EXPECT_EQ(render_progress(0, 7200, 1, 200), "[------------------------]   0%  0 B / 7.0 KiB  1 B/s  ETA 2:00:00");
  EXPECT_EQ(render_progress(10, 100, 0, 200), "[##----------------------]  10%  10 B / 100 B  -- B/s  ETA --:--");
}

TEST(RenderProgressTest, UnknownTotalShowsBytesAndRateOnly) {
  EXPECT_EQ(render_progress(3 << 10, std::nullopt, 2048, 200), "3.0 KiB read  2.0 KiB/s");
}

TEST(RenderProgressTest, NeverPassesTheTotalOrTheWidth) {
  EXPECT_EQ(render_progress(150, 100, 0, 200).substr(0, 32), "[########################] 100% ");
  EXPECT_EQ(render_progress(5 << 20, 10 << 20, 1 << 20, 20).size(), 20u);
}

TEST(SourceBytesTest, APositionCountsTheEarlierFilesOfTheFolderAndItsOffset) {
  std::string pattern = (std::filesystem::temp_directory_path() / "tidemark-progress-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::filesystem::path folder = pattern;
  std::ofstream(folder / "a.csv") << std::string(100, 'x');
  std::ofstream(folder / "b.csv") << std::string(50, 'x');
  std::ofstream(folder / "c.jsonl") << std::string(1000, 'x');  // another format: not read
  const SourceBytes bytes(folder, connectors::file::Format::kCsv);
  EXPECT_EQ(bytes.total(), 150u);
  EXPECT_EQ(bytes.before(pipeline::Position{}), 0u);
  EXPECT_EQ(bytes.before(connectors::file::FilePosition{"a.csv", 40}.to_position()), 40u);
  EXPECT_EQ(bytes.before(connectors::file::FilePosition{"b.csv", 10}.to_position()), 110u);
  const SourceBytes single(folder / "b.csv", connectors::file::Format::kCsv);
  EXPECT_EQ(single.total(), 50u);
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace tidemark::app
