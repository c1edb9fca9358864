#pragma once
// `run --metrics-file PATH`: the run's counters in the Prometheus text exposition format,
// for node_exporter's textfile collector (the Prometheus convention for batch jobs, which
// are gone before any scrape). The file is replaced atomically, so the collector never
// reads half of one.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "pipeline/core/record.hpp"

namespace tidemark::app {

// What one run of a pipeline reports, success or failure.
struct RunMetrics {
  std::string pipeline;
  pipeline::OutcomeCounts counts;  // of its committed batches
  std::uint64_t batches = 0;       // committed
  std::uint64_t rewritten_files = 0;  // files found changed since a run read them, read again
  double duration_seconds = 0;
  int exit_code = 0;
  double finished_at = 0;                   // unix time
  std::optional<double> last_success_at;    // unix time of the last run that exited 0, if any
};

// The exposition text: every family with its HELP and TYPE, gauges labelled by pipeline
// (and outcome: all eight, zeros included).
std::string metrics_text(const RunMetrics& metrics);

// The last success time recorded in an earlier file for `pipeline`, so that a failed run
// keeps it (the staleness alert measures from it); nullopt when there is no such file or
// line.
std::optional<double> previous_last_success(const std::filesystem::path& path, const std::string& pipeline);

// Replaces `path` with `text` atomically: written to a temporary file beside it (same folder,
// so same file system; named PATH.<pid>.<random>.tmp, which the textfile collector ignores as
// it reads only *.prom; created exclusively, so a file or symlink planted there is never
// written through; mode 0644), flushed to disk, renamed over `path`, and the folder synced. A
// reader sees the old file or the new one, never a part. Throws std::runtime_error naming the path.
void write_file_atomically(const std::filesystem::path& path, std::string_view text);

}  // namespace tidemark::app
