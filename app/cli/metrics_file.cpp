#include "app/cli/metrics_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <spdlog/fmt/fmt.h>

#include "pipeline/core/error.hpp"

namespace tidemark::app {

namespace {

constexpr std::string_view kLastSuccess = "tidemark_run_last_success_timestamp_seconds";

// A label value as the exposition format quotes it: backslash, quote and newline escaped.
std::string label_value(std::string_view value) {
  std::string text;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      text += '\\';
      text += c;
    } else if (c == '\n') {
      text += "\\n";
    } else {
      text += c;
    }
  }
  return text;
}

std::string pipeline_labels(const std::string& pipeline) { return "pipeline=\"" + label_value(pipeline) + "\""; }

void family(std::string& text, std::string_view name, std::string_view help) {
  text += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
}

std::string io_error(const std::filesystem::path& path, const std::string& what) {
  return "--metrics-file " + path.string() + ": " + what + ": " + std::strerror(errno);
}

}  // namespace

std::string metrics_text(const RunMetrics& metrics) {
  const std::string labels = pipeline_labels(metrics.pipeline);
  std::string text;
  family(text, "tidemark_run_records", "Records of the last run by outcome (its committed batches).");
  for (pipeline::Outcome outcome : pipeline::kAllOutcomes) {
    text += fmt::format("tidemark_run_records{{{},outcome=\"{}\"}} {}\n", labels, pipeline::to_string(outcome),
                        metrics.counts[outcome]);
  }
  family(text, "tidemark_run_batches", "Batches the last run committed.");
  text += fmt::format("tidemark_run_batches{{{}}} {}\n", labels, metrics.batches);
  family(text, "tidemark_run_rewritten_files",
         "Files the last run found changed since an earlier run read them, and read again from their start.");
  text += fmt::format("tidemark_run_rewritten_files{{{}}} {}\n", labels, metrics.rewritten_files);
  family(text, "tidemark_run_duration_seconds", "How long the last run took, from start to exit.");
  text += fmt::format("tidemark_run_duration_seconds{{{}}} {:.3f}\n", labels, metrics.duration_seconds);
  family(text, "tidemark_run_exit_code",
         "Exit status of the last run: 0 completed, 1 failed, 2 usage or configuration error, 128+N signal N.");
  text += fmt::format("tidemark_run_exit_code{{{}}} {}\n", labels, metrics.exit_code);
  family(text, "tidemark_run_finished_timestamp_seconds", "Unix time the last run ended, success or not.");
  text += fmt::format("tidemark_run_finished_timestamp_seconds{{{}}} {:.3f}\n", labels, metrics.finished_at);
  if (metrics.last_success_at) {
    family(text, kLastSuccess, "Unix time the last successful run (exit 0) ended.");
    text += fmt::format("{}{{{}}} {:.3f}\n", kLastSuccess, labels, *metrics.last_success_at);
  }
  return text;
}

std::optional<double> previous_last_success(const std::filesystem::path& path, const std::string& pipeline) {
  std::ifstream in(path);
  const std::string series = fmt::format("{}{{{}}} ", kLastSuccess, pipeline_labels(pipeline));
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, series.size(), series) != 0) continue;
    const char* value = line.c_str() + series.size();
    char* end = nullptr;
    const double seconds = std::strtod(value, &end);
    if (end != value) return seconds;
  }
  return std::nullopt;
}

void write_file_atomically(const std::filesystem::path& path, std::string_view text) {
  // A fresh name (random part) created exclusively: O_EXCL never opens what is already there,
  // a symlink planted at the name included, so neither the link's target is overwritten nor
  // the link renamed over `path` (a fixed name, as PATH.<pid>.tmp was, can be planted ahead).
  std::string name = path.string() + "." + std::to_string(::getpid()) + ".XXXXXX.tmp";
  int fd = ::mkostemps(name.data(), 4, O_CLOEXEC);
  const std::filesystem::path temporary = name;
  if (fd < 0) throw Error(ErrorKind::kPermanent, io_error(path, "cannot create " + temporary.string()));
  const auto fail = [&](const std::string& what) {
    const std::string message = io_error(path, what);  // before close and unlink change errno
    if (fd >= 0) ::close(fd);
    ::unlink(temporary.c_str());
    throw Error(ErrorKind::kPermanent, message);
  };
  // mkostemps makes it 0600; the collector (another user, as a rule) must read it, whatever the umask.
  if (::fchmod(fd, 0644) != 0) fail("cannot make " + temporary.string() + " readable");
  for (std::size_t written = 0; written < text.size();) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot write " + temporary.string());
    written += static_cast<std::size_t>(n);
  }
  // On disk before the rename: after a crash the name holds the old file or the whole new one.
  if (::fsync(fd) != 0) fail("cannot flush " + temporary.string());
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) fail("cannot close " + temporary.string());
  if (::rename(temporary.c_str(), path.c_str()) != 0) fail("cannot rename " + temporary.string() + " over it");
  // The rename itself is durable once the folder is synced.
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
  const int folder_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder_fd >= 0) {
    ::fsync(folder_fd);
    ::close(folder_fd);
  }
}

}  // namespace tidemark::app
