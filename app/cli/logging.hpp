#pragma once
// How every command logs (docs/cli.md): to stderr, timestamps in UTC with their `Z`,
// as text (`2026-12-01T06:00:00.123Z info message`) or as JSON lines
// (`{"ts":"2026-12-01T06:00:00.123Z","level":"info","msg":"message"}`), at the level asked.
// `--log-level` and `--log-format` sit on the root command and every sub-command falls
// through to it, so they are accepted before or after the command's name.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <CLI/CLI.hpp>
#include <spdlog/formatter.h>

namespace tidemark::app {

enum class LogFormat { kText, kJson };

struct LogOptions {
  std::string level;   // trace|debug|info|warn|error; empty: not given
  std::string format;  // text|json; empty: not given
};

// The stderr logger with the text format at info level, before anything is parsed.
void start_logging();
// Adds --log-level and --log-format to `root` and makes every sub-command added afterwards
// fall through to it; the options take effect once the command line is parsed, before any
// command runs. Logging is the process's (spdlog's default logger): so are the options.
void add_log_options(CLI::App& root);
// Applies a config's `log:` section: each field only when its flag was not given (the
// command line wins). Throws UsageError naming `where` (the config file) for a value that is
// not one of those above.
void apply_log_config(const std::optional<std::string>& level, const std::optional<std::string>& format,
                      const std::string& where);

// The level and format names as the options spell them (nullopt for any other text).
std::optional<spdlog::level::level_enum> parse_log_level(std::string_view name);
std::optional<LogFormat> parse_log_format(std::string_view name);
void set_log_format(LogFormat format);

// `text` on one line: its lines (libpq's errors have several: `ERROR: …`, `LINE 1: …`, a caret;
// a connection failure one per address tried) trimmed, the empty ones left out, joined with
// " | ". A text of one line loses only its trailing whitespace.
std::string one_line(std::string_view text);

// Every log line of both formats goes through this: it gives `inner` the message on one line
// (one_line), so that a line of the log is one record, whatever an error's text holds.
class OneLineFormatter final : public spdlog::formatter {
 public:
  explicit OneLineFormatter(std::unique_ptr<spdlog::formatter> inner) : inner_(std::move(inner)) {}
  void format(const spdlog::details::log_msg& message, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

 private:
  std::unique_ptr<spdlog::formatter> inner_;
};

// One JSON object per line: {"ts":…,"level":…,"msg":…}; the level named as --log-level
// names it (`warn`, not spdlog's `warning`).
class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& message, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;
};

// A log record's time as the logs print it: UTC with milliseconds and `Z`.
std::string log_timestamp(spdlog::log_clock::time_point time);

}  // namespace tidemark::app
