#pragma once
// Tidemark's YAML configuration (INTERFACE.md "Configuration"). Parsing is strict: an
// unknown key, a wrong type or a bad value is a ConfigError naming the file, line and key.
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tidemark::pipeline {

using Duration = std::chrono::milliseconds;

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct SourceConfig {
  std::string kind = "file";  // only "file" so far
  std::string path;           // a file or a folder, relative to the working directory
  std::string format;         // "csv" or "jsonl"
};

struct ScheduleConfig {
  std::optional<Duration> every;  // schedule: {every: 5m}
  std::optional<std::string> cron;  // schedule: {cron: "*/5 * * * *"} (five fields, UTC)
};

struct DestinationConfig {
  std::string name;  // unique across the file: outbox rows name their destination
  std::string kind;  // "http" or "view"
  std::string url;   // http: where events are POSTed
  std::string secret_env;  // http: the env var holding the whsec_… signing secret
  std::string ca_file;     // http, https:// only: PEM bundle trusted instead of the system store
};

struct PipelineConfig {
  std::string name;
  SourceConfig source;
  std::size_t batch_size = 10000;
  std::optional<ScheduleConfig> schedule;
  std::vector<DestinationConfig> destinations;
};

struct RelayConfig {
  int max_attempts = 10;
  Duration base_delay = std::chrono::seconds(1);
  Duration max_delay = std::chrono::minutes(5);
  std::size_t max_in_flight = 16;  // deliveries in flight at once, across keys
  Duration connect_timeout = std::chrono::seconds(5);
  Duration request_timeout = std::chrono::seconds(10);
};

struct HttpConfig {
  std::string listen = "127.0.0.1:8080";
};

struct Config {
  std::optional<std::string> database;
  HttpConfig http;
  std::map<std::string, PipelineConfig> pipelines;
  RelayConfig relay;

  // Every destination of every pipeline, by name.
  std::map<std::string, DestinationConfig> destinations() const;
};

// `file_name` is used in error messages only.
Config parse_config(std::string_view yaml_text, std::string_view file_name);
Config load_config(const std::filesystem::path& path);

// "250ms", "1s", "5m", "2h": an integer with a unit. nullopt when malformed.
std::optional<Duration> parse_duration(std::string_view text);

}  // namespace tidemark::pipeline
