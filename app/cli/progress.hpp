#pragma once
// The progress bar of a long `run` on a terminal (docs/cli.md): one line on stderr,
// redrawn in place, with the percent of the source's bytes read and the time left. Only when
// stderr is a terminal; otherwise the per-batch log lines are the progress, as before.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/sinks/sink.h>

#include "connectors/file/format.hpp"
#include "pipeline/core/source.hpp"

namespace tidemark::app {

// The bar's text, `width` columns at most: `[#####-----]  52%  13.4/25.8 MiB  1.2 MiB/s  ETA 0:10`.
// `total` unknown: the bytes read and the rate only. Pure, for the tests.
std::string render_progress(std::uint64_t done, std::optional<std::uint64_t> total, double bytes_per_second,
                            std::size_t width);

// The sizes of the files a file source reads (a single file, or the folder's files of its
// format, by name), and where a position of it lies in all their bytes.
class SourceBytes {
 public:
  SourceBytes(const std::filesystem::path& path, connectors::file::Format format);
  std::uint64_t total() const { return total_; }
  // Bytes before `position` (a FilePosition), 0 for one this source does not know.
  std::uint64_t before(const pipeline::Position& position) const;

 private:
  std::map<std::string, std::uint64_t> sizes_;  // by file name, in reading order
  std::uint64_t total_ = 0;
};

// Draws the bar on stderr while it lives, and keeps log lines readable: each line clears the
// bar first and the bar is drawn again below it. Create it before the run starts its
// threads and destroy it after they are joined (it swaps the default logger's sinks).
class ProgressBar {
 public:
  // Null unless stderr is a terminal (and TERM is not "dumb").
  static std::unique_ptr<ProgressBar> for_terminal();
  ProgressBar();
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Where reading starts (the checkpoint's place in the bytes): the rate is measured from it.
  void start(std::uint64_t done);
  // Any thread; redraws at most a few times a second.
  void update(std::uint64_t done, std::optional<std::uint64_t> total);

 private:
  class Sink;
  using Clock = std::chrono::steady_clock;
  std::shared_ptr<Sink> sink_;
  std::vector<spdlog::sink_ptr> replaced_;
  std::mutex mutex_;
  Clock::time_point started_ = Clock::now();
  std::uint64_t start_done_ = 0;
  std::optional<Clock::time_point> drawn_at_;
};

// `source` behind the same interface, reporting to `bar` where it has read to after each read.
std::unique_ptr<pipeline::Source> with_progress(std::unique_ptr<pipeline::Source> source,
                                                std::shared_ptr<const SourceBytes> bytes, ProgressBar& bar);

}  // namespace tidemark::app
