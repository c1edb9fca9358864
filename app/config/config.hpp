#pragma once
// Tidemark's YAML configuration (docs/configuration.md). Parsing is strict: an
// unknown key, a wrong type or a bad value is a ConfigError naming the file, line and key.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "app/config/cron.hpp"
#include "connectors/file/format.hpp"
#include "connectors/file/options.hpp"
#include "connectors/postgres/options.hpp"
#include "connectors/http/options.hpp"
#include "connectors/http_api/http_source.hpp"
#include "connectors/nats/options.hpp"
#include "connectors/nats_sink/options.hpp"
#include "pipeline/core/duration.hpp"
#include "pipeline/core/entity.hpp"
#include "pipeline/core/error.hpp"
#include "pipeline/core/view_declaration.hpp"
#include "pipeline/run/limits.hpp"

namespace tidemark::app::config {

// The pipeline's vocabulary that a configuration is written in.
using pipeline::DeclarationPart;
using pipeline::Duration;
using pipeline::EntityDeclaration;
using pipeline::RejectionLimit;
using pipeline::ViewDeclaration;

// One configuration error, or every error of a file (what(): one per line, in line order).
class ConfigError : public tidemark::Error {
 public:
  explicit ConfigError(const std::string& message)
      : tidemark::Error(tidemark::ErrorKind::kConfig, message), errors_{message} {}
  explicit ConfigError(std::vector<std::string> errors);
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::vector<std::string> errors_;
};

// The rule for pipeline and destination names, in the config and on the command line.
inline constexpr std::string_view kNameRule = "1-64 characters of A-Z, a-z, 0-9, '_' and '-'";
bool is_valid_name(std::string_view text);

// What a source kind can do. Callers ask these, never which kind a source is: each kind
// says what it can do in its descriptor (source_descriptors() in config.cpp).
struct SourceCapabilities {
  bool takes_file_override = false;  // `run --source/--format` replace its path and format
  // Read as partitions (partition_count()), each a run of its own under a worker's lease;
  // serve consumes it continuously, so no schedule or webhook starts its runs.
  bool partitioned = false;
  bool counts_reread_files = false;  // it reports files read again (tidemark_source_files_reread_total)
  bool measures_bytes = false;       // its input has a size in bytes: a run on a terminal draws a progress bar
};

// What a destination kind can do. Callers ask these, never which kind a destination is: each
// kind says what it can do in its descriptor (destination_descriptors() in config.cpp).
struct DestinationCapabilities {
  // It keeps a view of pipeline/views in Tidemark's database: its health (lag, dead events),
  // versions and snapshots are the views'. A view reads the built-in transaction entity only.
  bool view = false;
  // Several pipelines may list it (its name is unique across the file otherwise).
  bool shared = false;
  // It takes a window of its own (max_in_flight), at most the relay's.
  bool windowed = false;
};

using connectors::file::Format;  // the file source's formats (csv, jsonl), with its to_string

// What started a run; to_string is the name runs.trigger, JSON output and the API carry.
// kStream: serve started the run because a partition it owns holds new messages.
enum class Trigger { kCli, kSchedule, kWebhook, kStream };

std::string_view to_string(Trigger trigger);

// Each source kind's own options, as its connector declares them (connectors/<kind>/options.hpp
// or its header): the alternative held says which kind the source is.
using SourceOptions = std::variant<connectors::file::FileSourceOptions, connectors::postgres::Options,
                                   connectors::http_api::HttpSourceOptions, connectors::nats::NatsSourceOptions>;

struct SourceConfig {
  SourceOptions options;

  // Its kind's YAML name (`kind:`), as JSON output and messages give it.
  std::string_view kind() const;
  const SourceCapabilities& capabilities() const;
  // How many partitions it is read as: 1 unless partitioned.
  int partition_count() const;
  // A partitioned source's partition `partition`: its own source, and its name in a run's
  // summary (a nats partition's stream, ORDERS_3).
  SourceConfig partition(int partition) const;
  std::string partition_name(int partition) const;
  // A partitioned source's workers: one silent for owner_timeout is dead and its partitions
  // are taken; each beats and balances every rebalance_interval (docs/scale-out.md "Workers").
  Duration owner_timeout() const;
  Duration rebalance_interval() const;
  // What GET /v1/pipelines shows of it after its kind, by key in order: what tells the
  // source apart (a path, a table, a URL), never a secret.
  using ShownValue = std::variant<std::string, std::int64_t, std::vector<std::string>>;
  std::vector<std::pair<std::string, ShownValue>> shown() const;
  // The options of kind `Options`; nullptr when the source is of another kind.
  template <typename Options>
  const Options* get_if() const {
    return std::get_if<Options>(&options);
  }
  template <typename Options>
  Options* get_if() {
    return std::get_if<Options>(&options);
  }
};

// A duration and its text as the config writes it: messages quote the text (`every: 60s`
// is logged as `every 60s`, not re-formatted as `1m` or `60000ms`).
struct WrittenDuration {
  Duration value{};
  std::string text;
};

// A cron expression, parsed once by the config (what passes there is what `serve` runs on),
// and its text as the config writes it.
struct WrittenCron {
  CronExpression expression;
  std::string text;
};

struct ScheduleConfig {
  std::optional<WrittenDuration> every;  // schedule: {every: 5m}
  std::optional<WrittenCron> cron;       // schedule: {cron: "*/5 * * * *"} (five fields, UTC)
};

// A view destination is configured by its name alone (the view's name, pipeline/views).
struct ViewDestinationOptions {};

// Each destination kind's own options, as its connector declares them
// (connectors/<kind>/options.hpp): the alternative held says which kind it is.
using DestinationOptions = std::variant<connectors::http::HttpDestinationOptions, ViewDestinationOptions,
                                        connectors::nats_sink::NatsDestinationOptions>;

struct DestinationConfig {
  std::string name;  // unique across the file: outbox rows name their destination
  DestinationOptions options;
  // A windowed kind's own window, at most relay.max_in_flight (unset: the relay's whole one).
  std::optional<std::size_t> max_in_flight;
  int line = 0;            // of its name in the config file, for messages (0: not from a file)

  // Its kind's YAML name (`kind:`), as JSON output and messages give it.
  std::string_view kind() const;
  const DestinationCapabilities& capabilities() const;
  // The options of kind `Options`; nullptr when the destination is of another kind.
  template <typename Options>
  const Options* get_if() const {
    return std::get_if<Options>(&options);
  }
};

struct PipelineConfig {
  std::string name;
  // The entity it loads (`entity:`): a declared one, or the built-in one when absent.
  std::string entity = std::string(pipeline::kBuiltInEntityName);
  SourceConfig source;
  std::size_t batch_size = 10000;
  // A batch also closes before its records' raw bytes pass this (it always holds one record).
  std::size_t max_batch_bytes = pipeline::kDefaultMaxBatchBytes;
  std::optional<RejectionLimit> max_rejected;  // unlimited when unset
  std::optional<ScheduleConfig> schedule;
  std::vector<DestinationConfig> destinations;

  // The names of `destinations`, in the order listed: the outbox rows each record writes.
  std::vector<std::string> destination_names() const;
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
  std::size_t max_connections = 1024;   // open connections at once; beyond it the oldest idle one closes
  bool allow_unauthenticated = false;   // serve without TIDEMARK_API_TOKEN on a non-loopback address
  // Without TIDEMARK_API_TOKEN, the host names a /v1 request's Host may give besides the
  // listen address and localhost (what defeats DNS rebinding; docs/api.md).
  std::vector<std::string> allowed_hosts;
};

// How long each kind of history is kept (one section for every retention window).
struct RetentionConfig {
  Duration requests = std::chrono::hours(24 * 7);  // run_requests: webhook-ids and the runs they got
  // View inbox records (serve's hourly cleanup, `views cleanup`); the views' own default,
  // pipeline/views kDefaultInboxRetention.
  Duration inbox = std::chrono::hours(24 * 7);
  // Delivered outbox rows (kept while a view version of their destination is being built).
  Duration outbox = std::chrono::hours(24 * 7);
  // Finished runs and their batch_ledger rows, rolled up into tidemark_run_daily first.
  Duration runs = std::chrono::hours(24 * 90);
  // Released quarantine entries (an open entry is never deleted).
  Duration quarantine = std::chrono::hours(24 * 30);
};

// How the process logs (`log:`); a field left out keeps the default, and a command-line
// --log-level or --log-format wins over it (app/cli/logging.hpp apply_log_config).
struct LogConfig {
  std::optional<std::string> level;   // trace, debug, info, warn or error
  std::optional<std::string> format;  // text or json
};

struct Config {
  std::optional<std::string> database;
  LogConfig log;
  HttpConfig http;
  // The entities the file declares (`entities:`), checked; never the built-in `transaction`.
  std::map<std::string, EntityDeclaration> entities;
  // The views the file declares (`views:`), checked against their entities, filter values in
  // canonical form. Parsed and checked only: nothing builds or feeds them yet
  // (docs/design/declared-views-wip.md), and no destination may name one.
  std::map<std::string, ViewDeclaration> views;
  std::map<std::string, PipelineConfig> pipelines;
  RelayConfig relay;
  RetentionConfig retention;

  // Every destination of every pipeline, by name.
  std::map<std::string, DestinationConfig> destinations() const;
  // The names of every destination whose kind can do `capability` (&DestinationCapabilities::view), sorted.
  std::vector<std::string> destination_names_with(bool DestinationCapabilities::*capability) const;
  // The destination names of pipeline `pipeline`; none when it is not configured.
  std::vector<std::string> destination_names(const std::string& pipeline) const;
  // The pipelines that list destination `destination` (a view's feeders), by name.
  std::vector<std::string> pipelines_feeding(std::string_view destination) const;
  // Entity `name`: a declared one, or the built-in one for `transaction`. Throws
  // std::out_of_range for any other name (parsing lets none through in a pipeline).
  const EntityDeclaration& entity(std::string_view name) const;
  // The same, or nullptr for a name neither declared nor built in (an entry's entity that
  // the config no longer declares).
  const EntityDeclaration* find_entity(std::string_view name) const;
  // The entity pipeline `pipeline` loads. Throws std::out_of_range when it is not configured.
  const EntityDeclaration& entity_of(const std::string& pipeline) const;
};

// `file_name` is used in error messages only. Every error of the file is collected: a
// ConfigError carries them all (errors()), in line order.
Config parse_config(std::string_view yaml_text, std::string_view file_name);
Config load_config(const std::filesystem::path& path);

// For `tidemark check`: the same parsing, returning every error instead of throwing, with the
// config as far as it parsed (a part with an error is left out or at its defaults).
struct ConfigCheck {
  Config config;
  std::vector<std::string> errors;  // each "FILE:LINE: ...", in line order
};
ConfigCheck check_config(std::string_view yaml_text, std::string_view file_name);
ConfigCheck check_config_file(const std::filesystem::path& path);

// "250ms", "1s", "5m", "2h": an integer with a unit. nullopt when malformed.
std::optional<Duration> parse_duration(std::string_view text);
// The other way: format_duration (pipeline/core/duration.hpp).

}  // namespace tidemark::app::config
