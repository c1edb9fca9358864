#include "app/cli/logging.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "app/cli/commands.hpp"
#include "pipeline/core/json_value.hpp"

namespace tidemark::app {

namespace {

// UTC with its Z, as the API and cron are (docs/cli.md), whatever the machine's zone.
constexpr char kTextPattern[] = "%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v";

struct LevelName {
  std::string_view name;
  spdlog::level::level_enum level;
};
// As --log-level spells them; the first five are the ones it accepts.
constexpr LevelName kLevels[] = {
    {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug}, {"info", spdlog::level::info},
    {"warn", spdlog::level::warn},   {"error", spdlog::level::err},   {"critical", spdlog::level::critical},
};
constexpr std::size_t kAcceptedLevels = 5;

std::string_view level_name(spdlog::level::level_enum level) {
  for (const auto& known : kLevels) {
    if (known.level == level) return known.name;
  }
  return "off";
}

// The accepted names, as "a|b|c", for the messages.
std::string level_choices() {
  std::string text;
  for (std::size_t i = 0; i < kAcceptedLevels; ++i) text += (i == 0 ? "" : "|") + std::string(kLevels[i].name);
  return text;
}

// The command line's, set while it is parsed.
LogOptions& flags() {
  static LogOptions options;
  return options;
}

void apply(const LogOptions& options) {
  if (!options.level.empty()) spdlog::set_level(parse_log_level(options.level).value());
  if (!options.format.empty()) set_log_format(parse_log_format(options.format).value());
}

}  // namespace

std::optional<spdlog::level::level_enum> parse_log_level(std::string_view name) {
  for (std::size_t i = 0; i < kAcceptedLevels; ++i) {
    if (kLevels[i].name == name) return kLevels[i].level;
  }
  return std::nullopt;
}

std::optional<LogFormat> parse_log_format(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return std::nullopt;
}

void set_log_format(LogFormat format) {
  std::unique_ptr<spdlog::formatter> inner;
  if (format == LogFormat::kJson) {
    inner = std::make_unique<JsonLogFormatter>();
  } else {
    inner = std::make_unique<spdlog::pattern_formatter>(kTextPattern, spdlog::pattern_time_type::utc);
  }
  spdlog::set_formatter(std::make_unique<OneLineFormatter>(std::move(inner)));
}

std::string one_line(std::string_view text) {
  constexpr std::string_view kBlank = " \t\r\n";
  std::string joined;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    const std::size_t last = line.find_last_not_of(kBlank);
    line = line.substr(0, last == std::string_view::npos ? 0 : last + 1);
    // The first line keeps its indentation (it is the message's own); the others are parts of it.
    if (!joined.empty()) line.remove_prefix(std::min(line.find_first_not_of(kBlank), line.size()));
    if (line.empty()) continue;
    if (!joined.empty()) joined += " | ";
    joined += line;
  }
  return joined;
}

void OneLineFormatter::format(const spdlog::details::log_msg& message, spdlog::memory_buf_t& dest) {
  const std::string_view payload(message.payload.data(), message.payload.size());
  if (payload.find('\n') == std::string_view::npos && (payload.empty() || payload.back() != '\r')) {
    return inner_->format(message, dest);
  }
  const std::string flat = one_line(payload);
  spdlog::details::log_msg flattened = message;
  flattened.payload = spdlog::string_view_t(flat.data(), flat.size());
  inner_->format(flattened, dest);
}

std::unique_ptr<spdlog::formatter> OneLineFormatter::clone() const {
  return std::make_unique<OneLineFormatter>(inner_->clone());
}

void start_logging() {
  // Logs go to stderr; stdout carries only results (tables, the --json summary).
  spdlog::set_default_logger(spdlog::stderr_color_mt("tidemark"));
  set_log_format(LogFormat::kText);
}

void add_log_options(CLI::App& root) {
  LogOptions& options = flags();
  root.add_option("--log-level", options.level, "Log only messages at LEVEL or above: " + level_choices() +
                                                    " (default info, or the config's log.level)")
      ->option_text("LEVEL")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  root.add_option("--log-format", options.format,
                  "text (default, or the config's log.format) or json: one JSON object per line with ts, level, msg")
      ->option_text("text|json")
      ->check(CLI::IsMember({"text", "json"}));
  // Sub-commands created from now on inherit it: an option they do not know is looked up
  // here, so `tidemark run ... --log-level debug` works as `tidemark --log-level debug run ...`.
  root.fallthrough();
  // Sub-commands copy the footer too: their --help names the options they accept from here.
  root.footer("Every command also takes --log-level LEVEL and --log-format text|json, before or after its name.");
  root.parse_complete_callback([] { apply(flags()); });
}

void apply_log_config(const std::optional<std::string>& level, const std::optional<std::string>& format,
                      const std::string& where) {
  if (level && flags().level.empty()) {
    const auto parsed = parse_log_level(*level);
    if (!parsed) throw UsageError(where + " log.level \"" + *level + "\": expected one of " + level_choices());
    spdlog::set_level(*parsed);
  }
  if (format && flags().format.empty()) {
    const auto parsed = parse_log_format(*format);
    if (!parsed) throw UsageError(where + " log.format \"" + *format + "\": expected text or json");
    set_log_format(*parsed);
  }
}

std::string log_timestamp(spdlog::log_clock::time_point time) {
  const auto since_epoch = time.time_since_epoch();
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch - seconds).count();
  const std::time_t whole = seconds.count();
  std::tm parts{};
  gmtime_r(&whole, &parts);
  char text[40];
  const std::size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &parts);
  std::snprintf(text + length, sizeof text - length, ".%03dZ", static_cast<int>(millis));
  return text;
}

void JsonLogFormatter::format(const spdlog::details::log_msg& message, spdlog::memory_buf_t& dest) {
  std::string line = "{\"ts\":\"" + log_timestamp(message.time) + "\",\"level\":\"";
  line += level_name(message.level);
  line += "\",\"msg\":";
  // Whatever a message quotes (a file name, a record), the line parses: bytes that are not
  // UTF-8 become U+FFFD, and DEL is escaped with the other controls.
  pipeline::append_json_string(line, std::string_view(message.payload.data(), message.payload.size()),
                               pipeline::JsonDelete::kEscaped);
  line += "}\n";
  dest.append(line.data(), line.data() + line.size());
}

std::unique_ptr<spdlog::formatter> JsonLogFormatter::clone() const { return std::make_unique<JsonLogFormatter>(); }

}  // namespace tidemark::app
