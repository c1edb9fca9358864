#include "app/cli/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include "connectors/file/file_position.hpp"
#include "connectors/file/file_source.hpp"

namespace tidemark::app {

namespace {

constexpr std::size_t kBarCells = 24;
constexpr auto kRedrawEvery = std::chrono::milliseconds(200);

std::string human_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, kUnits[unit]);
}

std::string clock_text(double seconds) {
  const auto whole = static_cast<std::uint64_t>(seconds + 0.5);
  if (whole >= 3600) return fmt::format("{}:{:02}:{:02}", whole / 3600, whole / 60 % 60, whole % 60);
  return fmt::format("{}:{:02}", whole / 60, whole % 60);
}

std::size_t terminal_width() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

}  // namespace

std::string render_progress(std::uint64_t done, std::optional<std::uint64_t> total, double bytes_per_second,
                            std::size_t width) {
  const std::string rate = bytes_per_second > 0 ? human_bytes(bytes_per_second) + "/s" : "-- B/s";
  std::string text;
  if (total && *total > 0) {
    const std::uint64_t shown = std::min(done, *total);
    const double fraction = static_cast<double>(shown) / static_cast<double>(*total);
    const auto cells = static_cast<std::size_t>(fraction * kBarCells);
    const std::string eta = bytes_per_second > 0 ? clock_text(static_cast<double>(*total - shown) / bytes_per_second)
                                                 : std::string("--:--");
    text = fmt::format("[{}{}] {:3}%  {} / {}  {}  ETA {}", std::string(cells, '#'), std::string(kBarCells - cells, '-'),
                       static_cast<int>(fraction * 100), human_bytes(static_cast<double>(shown)),
                       human_bytes(static_cast<double>(*total)), rate, eta);
  } else {
    text = fmt::format("{} read  {}", human_bytes(static_cast<double>(done)), rate);
  }
  // A line longer than the terminal would wrap, and \r would then redraw only its last part.
  if (text.size() > width) text.resize(width);
  return text;
}

SourceBytes::SourceBytes(const std::filesystem::path& path, connectors::file::Format format) {
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::canonical(path, ec);
  if (ec) return;  // the run says why it cannot read it
  const auto add = [&](const std::filesystem::path& file) {
    std::error_code size_ec;
    const std::uint64_t size = std::filesystem::file_size(file, size_ec);
    if (size_ec) return;
    sizes_[file.filename().string()] = size;
    total_ += size;
  };
  if (!std::filesystem::is_directory(canonical, ec)) {
    add(canonical);
    return;
  }
  for (const auto& file : connectors::file::folder_files(canonical, format, ec)) add(file);
}

std::uint64_t SourceBytes::before(const pipeline::Position& position) const {
  const auto parsed = connectors::file::FilePosition::parse(position);
  if (!parsed) return 0;
  std::uint64_t bytes = 0;
  for (const auto& [name, size] : sizes_) {
    if (name >= parsed->file) break;  // std::map orders names as the source reads them
    bytes += size;
  }
  return bytes + parsed->offset;
}

// Forwards to the sinks it replaced, erasing the bar before each log line and drawing it
// again after, all under one lock so that the two never interleave.
class ProgressBar::Sink final : public spdlog::sinks::sink {
 public:
  explicit Sink(std::vector<spdlog::sink_ptr> inner) : inner_(std::move(inner)) {}

  void log(const spdlog::details::log_msg& message) override {
    std::lock_guard lock(mutex_);
    erase();
    for (const auto& sink : inner_) {
      if (sink->should_log(message.level)) sink->log(message);
    }
    draw();
  }
  void flush() override {
    std::lock_guard lock(mutex_);
    for (const auto& sink : inner_) sink->flush();
  }
  void set_pattern(const std::string& pattern) override {
    for (const auto& sink : inner_) sink->set_pattern(pattern);
  }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    for (const auto& sink : inner_) sink->set_formatter(formatter->clone());
  }

  void show(std::string line) {
    std::lock_guard lock(mutex_);
    line_ = std::move(line);
    draw();
  }
  void clear() {
    std::lock_guard lock(mutex_);
    erase();
    line_.clear();
  }

 private:
  void erase() {
    if (!drawn_) return;
    std::fputs("\r\033[K", stderr);  // to the line's start, and clear it
    drawn_ = false;
  }
  void draw() {
    if (line_.empty()) return;
    std::fputs("\r\033[K", stderr);
    std::fputs(line_.c_str(), stderr);
    std::fflush(stderr);
    drawn_ = true;
  }

  std::vector<spdlog::sink_ptr> inner_;
  std::mutex mutex_;
  std::string line_;
  bool drawn_ = false;
};

std::unique_ptr<ProgressBar> ProgressBar::for_terminal() {
  const char* term = std::getenv("TERM");
  if (::isatty(STDERR_FILENO) == 0 || (term != nullptr && std::strcmp(term, "dumb") == 0)) return nullptr;
  return std::make_unique<ProgressBar>();
}

ProgressBar::ProgressBar() {
  auto& sinks = spdlog::default_logger()->sinks();
  replaced_ = sinks;
  sink_ = std::make_shared<Sink>(replaced_);
  sinks = {sink_};
}

ProgressBar::~ProgressBar() {
  sink_->clear();
  spdlog::default_logger()->sinks() = replaced_;
}

void ProgressBar::start(std::uint64_t done) {
  std::lock_guard lock(mutex_);
  started_ = Clock::now();
  start_done_ = done;
}

void ProgressBar::update(std::uint64_t done, std::optional<std::uint64_t> total) {
  std::unique_lock lock(mutex_);
  const auto now = Clock::now();
  if (drawn_at_ && now - *drawn_at_ < kRedrawEvery) return;
  drawn_at_ = now;
  const double seconds = std::chrono::duration<double>(now - started_).count();
  const double rate = seconds > 0 && done > start_done_ ? static_cast<double>(done - start_done_) / seconds : 0.0;
  lock.unlock();
  sink_->show(render_progress(done, total, rate, terminal_width() - 1));
}

namespace {

class ProgressSource final : public pipeline::Source {
 public:
  ProgressSource(std::unique_ptr<pipeline::Source> inner, std::shared_ptr<const SourceBytes> bytes, ProgressBar& bar)
      : inner_(std::move(inner)), bytes_(std::move(bytes)), bar_(bar) {}

  const std::string& identity() const override { return inner_->identity(); }
  void seek(const pipeline::Position& from) override { inner_->seek(from); }
  std::size_t read(std::vector<pipeline::DecodedRecord>& out, std::size_t max_records,
                   std::size_t max_bytes) override {
    if (!started_) {
      bar_.start(bytes_->before(inner_->position()));  // the checkpoint, after any seek
      started_ = true;
    }
    const std::size_t read = inner_->read(out, max_records, max_bytes);
    const std::uint64_t total = bytes_->total();
    bar_.update(bytes_->before(inner_->position()), total > 0 ? std::optional(total) : std::nullopt);
    return read;
  }
  pipeline::Position position() const override { return inner_->position(); }
  bool precedes(const pipeline::Position& earlier, const pipeline::Position& later) const override {
    return inner_->precedes(earlier, later);
  }
  std::string_view format() const override { return inner_->format(); }
  std::uint64_t pending_tail_bytes() const override { return inner_->pending_tail_bytes(); }
  void restore_marks(std::vector<pipeline::FileMark> stored) override { inner_->restore_marks(std::move(stored)); }
  std::vector<pipeline::FileMark> take_marks() override { return inner_->take_marks(); }
  std::vector<std::string> seen_files() const override { return inner_->seen_files(); }
  std::vector<pipeline::ChangedFile> changed_files() const override { return inner_->changed_files(); }

 private:
  std::unique_ptr<pipeline::Source> inner_;
  std::shared_ptr<const SourceBytes> bytes_;
  ProgressBar& bar_;
  bool started_ = false;
};

}  // namespace

std::unique_ptr<pipeline::Source> with_progress(std::unique_ptr<pipeline::Source> source,
                                                std::shared_ptr<const SourceBytes> bytes, ProgressBar& bar) {
  return std::make_unique<ProgressSource>(std::move(source), std::move(bytes), bar);
}

}  // namespace tidemark::app
