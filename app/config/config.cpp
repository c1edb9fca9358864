#include "app/config/config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <utility>

#include "app/config/cron.hpp"

namespace tidemark::pipeline {

namespace {

constexpr std::size_t kMaxBatchSize = 1'000'000;
constexpr std::size_t kMaxBatchBytes = std::size_t{1} << 30;
constexpr std::size_t kMaxNameLength = 64;
constexpr std::string_view kNameRule = "1-64 characters of A-Z, a-z, 0-9, '_' and '-'";

// Decimal digits only: no sign, no spaces, no base prefix. nullopt on overflow.
std::optional<std::uint64_t> parse_unsigned(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

bool is_name(std::string_view text) {
  return !text.empty() && text.size() <= kMaxNameLength && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

bool is_env_var_name(std::string_view text) {
  return !text.empty() && !(text[0] >= '0' && text[0] <= '9') && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Each kind with its name (YAML, stored, printed): the one place either is spelt.
constexpr std::pair<std::string_view, SourceKind> kSourceKinds[] = {{"file", SourceKind::kFile}};
constexpr std::pair<std::string_view, DestinationKind> kDestinationKinds[] = {{"http", DestinationKind::kHttp},
                                                                             {"view", DestinationKind::kView}};
constexpr std::pair<std::string_view, Trigger> kTriggers[] = {
    {"cli", Trigger::kCli}, {"schedule", Trigger::kSchedule}, {"webhook", Trigger::kWebhook}};

template <typename Kind, std::size_t N>
std::string_view name_of(Kind kind, const std::pair<std::string_view, Kind> (&names)[N]) {
  for (const auto& [name, listed] : names) {
    if (listed == kind) return name;
  }
  return "unknown";  // only a value cast from outside the enumerators
}

std::string join(std::initializer_list<std::string_view> words) {
  std::string out;
  for (const auto word : words) {
    if (!out.empty()) out += ", ";
    out += word;
  }
  return out;
}

// What the user wrote, for "got …" in messages.
std::string describe(const YAML::Node& node) {
  if (node.IsNull()) return "nothing";
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  return '"' + node.Scalar() + '"';
}

// One key of a map with its value; `path` is the dotted key path used in messages.
struct Entry {
  YAML::Node key;
  YAML::Node value;
  std::string path;
};

std::string child_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

class Parser {
 public:
  explicit Parser(std::string_view file_name) : file_name_(file_name) {}

  Config parse(const YAML::Node& root) {
    Config config;
    if (root.IsNull()) return config;  // an empty file: every default
    const auto top =
        fields({YAML::Node(), root, ""}, {"database", "http", "entities", "pipelines", "relay", "retention"});
    if (const auto* database = find(top, "database")) {
      config.database = non_empty_string(*database);
    }
    if (const auto* http = find(top, "http")) config.http = parse_http(*http);
    // Before the pipelines, wherever the file has them: a pipeline names its entity.
    if (const auto* entities = find(top, "entities")) parse_entities(*entities, config);
    if (const auto* pipelines = find(top, "pipelines")) parse_pipelines(*pipelines, config);
    if (const auto* relay = find(top, "relay")) config.relay = parse_relay(*relay);
    if (const auto* retention = find(top, "retention")) config.retention = parse_retention(*retention);
    return config;
  }

  [[noreturn]] void fail(const YAML::Mark& mark, std::string_view message) const {
    throw ConfigError(file_name_ + ":" + std::to_string(mark.line + 1) + ": " + std::string(message));
  }

 private:
  using Fields = std::map<std::string, Entry, std::less<>>;

  // A value error points at a scalar value itself, else at its key: a map or list value
  // starts on a later line, and a missing value has no position of its own.
  static YAML::Mark mark_of(const Entry& entry) {
    if (entry.value.IsDefined() && entry.value.IsScalar()) return entry.value.Mark();
    if (entry.key.IsDefined() && !entry.key.Mark().is_null()) return entry.key.Mark();
    return entry.value.Mark();
  }

  // "pipelines.p.batch_size: "; nothing for the document itself.
  static std::string key_prefix(const Entry& entry) { return entry.path.empty() ? "" : entry.path + ": "; }

  // `why`, when given, follows in parentheses.
  [[noreturn]] void fail_value(const Entry& entry, std::string_view expected, std::string_view why = "") const {
    fail(mark_of(entry), key_prefix(entry) + "expected " + std::string(expected) + ", got " + describe(entry.value) +
                             (why.empty() ? "" : " (" + std::string(why) + ")"));
  }

  // The enumerator `names` gives the entry's string; else a value error expecting `expected`.
  template <typename Kind, std::size_t N>
  Kind enum_value(const Entry& entry, const std::pair<std::string_view, Kind> (&names)[N],
                  std::string_view expected) const {
    const std::string text = string_value(entry);
    for (const auto& [name, kind] : names) {
      if (name == text) return kind;
    }
    fail_value(entry, expected);
  }

  [[noreturn]] void fail_at(const Entry& entry, std::string_view problem) const {
    fail(mark_of(entry), key_prefix(entry) + std::string(problem));
  }

  static const Entry* find(const Fields& fields, std::string_view key) {
    const auto it = fields.find(key);
    return it == fields.end() ? nullptr : &it->second;
  }

  const Entry& require(const Fields& fields, const Entry& map, std::string_view key) const {
    const auto* entry = find(fields, key);
    if (entry == nullptr) fail(map.value.Mark(), key_prefix(map) + "missing required key '" + std::string(key) + "'");
    return *entry;
  }

  // The keys of a map, each checked against `allowed` (strict: a typo is an error, not a
  // silently ignored setting). `secret_hint` is appended when an unknown key looks like a secret.
  Fields fields(const Entry& map, std::initializer_list<std::string_view> allowed,
                std::string_view secret_hint = "") const {
    if (!map.value.IsMap()) fail_value(map, "a map with keys " + join(allowed));
    Fields out;
    for (const auto& pair : map.value) {
      const std::string where = map.path.empty() ? "at the top level" : "in " + map.path;
      if (!pair.first.IsScalar())
        fail(pair.first.Mark(), "a key " + where + " is " + describe(pair.first) + ", not a name");
      const std::string key = pair.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        fail(pair.first.Mark(), "unknown key '" + key + "' " + where + " (expected one of: " + join(allowed) + ")" +
                                    (key.find("secret") == std::string::npos ? "" : std::string(secret_hint)));
      }
      if (const auto* earlier = find(out, key)) {
        fail(pair.first.Mark(), "duplicate key '" + key + "' " + where + " (first at line " +
                                    std::to_string(earlier->key.Mark().line + 1) + ")");
      }
      out.emplace(key, Entry{pair.first, pair.second, child_path(map.path, key)});
    }
    return out;
  }

  std::string string_value(const Entry& entry) const {
    if (!entry.value.IsScalar()) fail_value(entry, "a string");
    return entry.value.Scalar();
  }

  std::string non_empty_string(const Entry& entry) const {
    auto text = string_value(entry);
    if (text.empty()) fail_value(entry, "a non-empty string");
    return text;
  }

  std::uint64_t integer_value(const Entry& entry, std::uint64_t min, std::uint64_t max,
                              std::string_view expected) const {
    const auto value = entry.value.IsScalar() ? parse_unsigned(entry.value.Scalar()) : std::nullopt;
    if (!value || *value < min || *value > max) fail_value(entry, expected);
    return *value;
  }

  bool boolean_value(const Entry& entry) const {
    if (!entry.value.IsScalar() || (entry.value.Scalar() != "true" && entry.value.Scalar() != "false")) {
      fail_value(entry, "true or false");
    }
    return entry.value.Scalar() == "true";
  }

  Duration duration_value(const Entry& entry) const {
    const auto value = entry.value.IsScalar() ? parse_duration(entry.value.Scalar()) : std::nullopt;
    if (!value || value->count() <= 0) {
      fail_value(entry, "a positive duration: an integer with a unit ms, s, m or h (e.g. 250ms, 30s, 5m, 2h)");
    }
    return *value;
  }

  HttpConfig parse_http(const Entry& map) const {
    HttpConfig http;
    const auto keys = fields(map, {"listen", "max_connections", "allow_unauthenticated"});
    if (const auto* listen = find(keys, "listen")) {
      http.listen = string_value(*listen);
      const auto colon = http.listen.rfind(':');
      const auto port =
          colon == std::string::npos ? std::nullopt : parse_unsigned(std::string_view(http.listen).substr(colon + 1));
      if (colon == 0 || !port || *port > 65535) fail_value(*listen, "HOST:PORT (e.g. 127.0.0.1:8080)");
    }
    if (const auto* entry = find(keys, "max_connections")) {
      http.max_connections = integer_value(*entry, 1, 1000000, "an integer from 1 to 1000000");
    }
    if (const auto* entry = find(keys, "allow_unauthenticated")) http.allow_unauthenticated = boolean_value(*entry);
    return http;
  }

  RetentionConfig parse_retention(const Entry& map) const {
    RetentionConfig retention;
    const auto keys = fields(map, {"requests"});
    if (const auto* entry = find(keys, "requests")) retention.requests = duration_value(*entry);
    return retention;
  }

  // Each declared entity, checked by the core's rules (pipeline/core/entity.hpp); an error
  // points at the line of the part it is about.
  void parse_entities(const Entry& map, Config& config) const {
    if (!map.value.IsMap()) fail_value(map, "a map from entity name to its declaration");
    for (const auto& pair : map.value) {
      if (!pair.first.IsScalar()) fail(pair.first.Mark(), map.path + ": an entity name is " + describe(pair.first));
      const std::string name = pair.first.Scalar();
      if (config.entities.contains(name)) fail(pair.first.Mark(), "duplicate key '" + name + "' in " + map.path);
      const Entry entry{pair.first, pair.second, child_path(map.path, name)};
      EntityDeclaration entity = parse_entity(entry, name);
      if (const auto error = check_table_unused(config.entities, entity)) {
        fail_at(entity_part(entry, DeclarationPart::kTable, ""), *error);
      }
      config.entities.emplace(name, std::move(entity));
    }
  }

  EntityDeclaration parse_entity(const Entry& map, const std::string& name) const {
    EntityDeclaration entity;
    entity.name = name;
    const auto keys = fields(map, {"table", "key", "revision", "partition_by", "extra_fields", "fields"});
    entity.table = name;
    if (const auto* table = find(keys, "table")) entity.table = string_value(*table);
    entity.key = string_value(require(keys, map, "key"));
    entity.revision = string_value(require(keys, map, "revision"));
    entity.partition_by = entity.key;
    if (const auto* partition_by = find(keys, "partition_by")) entity.partition_by = string_value(*partition_by);
    if (const auto* extra_fields = find(keys, "extra_fields")) {
      const auto mode = extra_fields_from_string(string_value(*extra_fields));
      if (!mode) fail_value(*extra_fields, "ignore, reject or keep");
      entity.extra_fields = *mode;
    }
    if (const auto* declared = find(keys, "fields")) {
      if (!declared->value.IsMap()) fail_value(*declared, "a map from field name to its type and rules");
      for (const auto& pair : declared->value) {
        if (!pair.first.IsScalar()) {
          fail(pair.first.Mark(), declared->path + ": a field name is " + describe(pair.first));
        }
        const std::string field = pair.first.Scalar();
        if (entity.field(field) != nullptr) {
          fail(pair.first.Mark(), "duplicate key '" + field + "' in " + declared->path);
        }
        entity.fields.push_back(parse_field({pair.first, pair.second, child_path(declared->path, field)}, field));
      }
    }
    if (const auto error = check_declared_entity(entity)) {
      fail_at(entity_part(map, error->part, error->field), error->message);
    }
    return entity;
  }

  FieldSpec parse_field(const Entry& map, const std::string& name) const {
    FieldSpec field;
    field.name = name;
    const auto keys = fields(map, {"type", "required", "max_length", "precision", "scale"});
    const auto& type = require(keys, map, "type");
    const auto parsed = field_type_from_string(string_value(type));
    if (!parsed) fail_value(type, field_type_names());
    field.type = *parsed;
    if (const auto* required = find(keys, "required")) field.required = boolean_value(*required);
    // Each rule belongs to one type: on another it would be silently meaningless.
    if (const auto* max_length = find(keys, "max_length")) {
      if (field.type != FieldType::kText) fail_at(*max_length, "applies to text fields only");
      field.max_length = integer_value(*max_length, 0, std::numeric_limits<std::size_t>::max(), "a whole number");
    }
    for (const auto rule : {"precision", "scale"}) {
      if (const auto* entry = find(keys, rule); entry != nullptr && field.type != FieldType::kDecimal) {
        fail_at(*entry, "applies to decimal fields only");
      }
    }
    if (field.type == FieldType::kDecimal) {
      // The ranges are the core's to check (check_declared_entity), with one message for them.
      const auto whole_number = [this](const Entry& entry) {
        return static_cast<int>(integer_value(entry, 0, std::numeric_limits<int>::max(), "a whole number"));
      };
      const auto* precision = find(keys, "precision");
      if (precision == nullptr) {
        fail_at(map, "a decimal field needs a precision (1 to " + std::to_string(kMaxDecimalPrecision) +
                         "), e.g. {type: decimal, precision: 12, scale: 2}");
      }
      field.precision = whole_number(*precision);
      if (const auto* scale = find(keys, "scale")) field.scale = whole_number(*scale);
    }
    return field;
  }

  // "text, integer, ... or json", from the core's list of types.
  static std::string field_type_names() {
    std::string names;
    for (std::size_t i = 0; i < kFieldTypes.size(); ++i) {
      if (i > 0) names += i + 1 == kFieldTypes.size() ? " or " : ", ";
      names += kFieldTypes[i].first;
    }
    return names;
  }

  // The entry of `map`'s declaration that `part` (of field `field`) is about: the key that
  // says it, else (a default) the entity's or the field's name.
  static Entry entity_part(const Entry& map, DeclarationPart part, const std::string& field) {
    const auto key_of = [](const Entry& parent, std::string_view key) -> Entry {
      if (!parent.value.IsMap()) return parent;
      for (const auto& pair : parent.value) {
        if (pair.first.IsScalar() && pair.first.Scalar() == key) {
          return {pair.first, pair.second, child_path(parent.path, key)};
        }
      }
      return parent;
    };
    const auto field_part = [&](std::string_view rule) { return key_of(key_of(key_of(map, "fields"), field), rule); };
    switch (part) {
      case DeclarationPart::kName: return map;
      case DeclarationPart::kTable: return key_of(map, "table");
      case DeclarationPart::kKey: return key_of(map, "key");
      case DeclarationPart::kRevision: return key_of(map, "revision");
      case DeclarationPart::kPartitionBy: return key_of(map, "partition_by");
      case DeclarationPart::kFieldName: return key_of(key_of(map, "fields"), field);
      case DeclarationPart::kFieldMaxLength: return field_part("max_length");
      case DeclarationPart::kFieldPrecision: return field_part("precision");
      case DeclarationPart::kFieldScale: return field_part("scale");
    }
    return map;
  }

  void parse_pipelines(const Entry& map, Config& config) {
    if (!map.value.IsMap()) fail_value(map, "a map from pipeline name to its settings");
    for (const auto& pair : map.value) {
      if (!pair.first.IsScalar() || !is_name(pair.first.Scalar())) {
        fail(pair.first.Mark(),
             map.path + ": invalid pipeline name " + describe(pair.first) + " (" + std::string(kNameRule) + ")");
      }
      const std::string name = pair.first.Scalar();
      if (config.pipelines.contains(name)) {
        fail(pair.first.Mark(), "duplicate key '" + name + "' in " + map.path);
      }
      config.pipelines.emplace(
          name, parse_pipeline({pair.first, pair.second, child_path(map.path, name)}, name, config.entities));
    }
  }

  PipelineConfig parse_pipeline(const Entry& map, const std::string& name,
                                const std::map<std::string, EntityDeclaration>& entities) {
    PipelineConfig pipeline;
    pipeline.name = name;
    const auto keys =
        fields(map, {"entity", "source", "batch_size", "max_batch_bytes", "max_rejected", "schedule", "destinations"});
    if (const auto* entity = find(keys, "entity")) {
      pipeline.entity = string_value(*entity);
      if (pipeline.entity != kBuiltInEntityName && !entities.contains(pipeline.entity)) {
        std::string declared;
        for (const auto& [declared_name, declaration] : entities) {
          declared += (declared.empty() ? "" : ", ") + declared_name;
        }
        fail_at(*entity, "unknown entity '" + pipeline.entity + "' (" +
                             (declared.empty() ? "none is declared under entities" : "declared: " + declared) + "; " +
                             std::string(kBuiltInEntityName) + " is the built-in one)");
      }
    }
    pipeline.source = parse_source(require(keys, map, "source"));
    if (const auto* batch_size = find(keys, "batch_size")) {
      pipeline.batch_size = integer_value(*batch_size, 1, kMaxBatchSize,
                                          "a positive integer (at most " + std::to_string(kMaxBatchSize) + ")");
    }
    if (const auto* max_batch_bytes = find(keys, "max_batch_bytes")) {
      pipeline.max_batch_bytes = integer_value(*max_batch_bytes, 1, kMaxBatchBytes,
                                               "a number of bytes from 1 to " + std::to_string(kMaxBatchBytes));
    }
    if (const auto* max_rejected = find(keys, "max_rejected")) {
      pipeline.max_rejected = max_rejected->value.IsScalar() ? parse_rejection_limit(max_rejected->value.Scalar())
                                                             : std::nullopt;
      if (!pipeline.max_rejected) fail_value(*max_rejected, "a count (e.g. 100) or a percentage (e.g. 5%)");
    }
    if (const auto* schedule = find(keys, "schedule")) pipeline.schedule = parse_schedule(*schedule);
    if (const auto* destinations = find(keys, "destinations")) {
      pipeline.destinations = parse_destinations(*destinations, pipeline.entity);
    }
    return pipeline;
  }

  SourceConfig parse_source(const Entry& map) const {
    SourceConfig source;
    const auto keys = fields(map, {"kind", "path", "format", "settle"});
    if (const auto* kind = find(keys, "kind")) {
      source.kind = enum_value(*kind, kSourceKinds, "file (the only source kind so far)");
    }
    source.path = non_empty_string(require(keys, map, "path"));
    if (const auto* format = find(keys, "format")) {
      const auto parsed = connectors::file::parse_format(string_value(*format));
      if (!parsed) fail_value(*format, "csv or jsonl");
      source.format = *parsed;
    } else if (const auto inferred =
                   connectors::file::format_from_extension(source.path, connectors::file::ExtensionCase::kIgnore)) {
      source.format = *inferred;
    } else {
      fail_at(map, "cannot tell the format of '" + source.path +
                       "' from its extension (.csv, .jsonl, .ndjson): add format: csv or format: jsonl");
    }
    if (const auto* settle = find(keys, "settle")) {
      // Zero is allowed here (unlike other durations): it reads a last line at once.
      const auto value = settle->value.IsScalar() ? parse_duration(settle->value.Scalar()) : std::nullopt;
      if (!value) fail_value(*settle, "a duration: an integer with a unit ms, s, m or h (e.g. 2s, 0s)");
      source.settle = *value;
    }
    return source;
  }

  ScheduleConfig parse_schedule(const Entry& map) const {
    ScheduleConfig schedule;
    const auto keys = fields(map, {"every", "cron"});
    const auto* every = find(keys, "every");
    const auto* cron = find(keys, "cron");
    if ((every == nullptr) == (cron == nullptr)) {
      fail_at(map, "expected exactly one of every (e.g. every: 5m) or cron (e.g. cron: \"*/5 * * * *\")");
    }
    if (every != nullptr) schedule.every = duration_value(*every);
    if (cron != nullptr) {
      schedule.cron = string_value(*cron);
      // The scheduler's own parser: what passes here is what `serve` runs on.
      std::string error;
      if (!CronExpression::parse(*schedule.cron, error)) {
        fail_value(*cron, "five fields (minute hour day-of-month month day-of-week) of digits, '*', ',', '-' and '/'",
                   error);
      }
    }
    return schedule;
  }

  // `entity` is the one the pipeline loads: a view reads the built-in one only.
  std::vector<DestinationConfig> parse_destinations(const Entry& list, std::string_view entity) {
    if (!list.value.IsSequence()) fail_value(list, "a list of destinations");
    std::vector<DestinationConfig> destinations;
    for (std::size_t i = 0; i < list.value.size(); ++i) {
      const Entry item{list.key, list.value[i], list.path + "[" + std::to_string(i) + "]"};
      destinations.push_back(parse_destination(item, entity));
      for (std::size_t j = 0; j + 1 < destinations.size(); ++j) {
        if (destinations[j].name == destinations.back().name) {
          fail_at(item, "destination '" + destinations.back().name + "' is listed twice in this pipeline");
        }
      }
    }
    return destinations;
  }

  DestinationConfig parse_destination(const Entry& map, std::string_view entity) {
    DestinationConfig destination;
    const auto keys = fields(map, {"name", "kind", "url", "secret_env", "ca_file"},
                             "; secrets are never in the file: use secret_env to name the environment variable "
                             "that holds it");
    const auto& name = require(keys, map, "name");
    destination.name = string_value(name);
    if (!is_name(destination.name)) fail_value(name, "a name of " + std::string(kNameRule));
    const auto& kind = require(keys, map, "kind");
    destination.kind = enum_value(kind, kDestinationKinds, "http or view");
    // The views (account_balance, daily_totals) fold transaction amounts by account; another
    // entity's events have neither.
    if (destination.kind == DestinationKind::kView && entity != kBuiltInEntityName) {
      fail_at(kind, "a view destination reads the built-in transaction entity; this pipeline loads entity '" +
                        std::string(entity) + "' (use an http destination)");
    }
    // Unique across the file, not per pipeline: outbox rows name only their destination. A
    // view is the exception: several pipelines may list it, and it reflects all of them.
    if (const auto [it, inserted] =
            destination_lines_.emplace(destination.name, Definition{mark_of(name).line + 1, destination.kind});
        !inserted && (destination.kind != DestinationKind::kView || it->second.kind != DestinationKind::kView)) {
      fail_at(name, "destination '" + destination.name + "' is already defined at line " +
                        std::to_string(it->second.line) +
                        " (destination names must be unique across the file; only a view destination may be "
                        "listed by several pipelines)");
    }
    if (destination.kind == DestinationKind::kHttp) {
      const auto& url = require(keys, map, "url");
      destination.url = string_value(url);
      if (!destination.url.starts_with("http://") && !destination.url.starts_with("https://")) {
        fail_value(url, "a URL starting with http:// or https://");
      }
      const auto& secret_env = require(keys, map, "secret_env");
      destination.secret_env = string_value(secret_env);
      if (!is_env_var_name(destination.secret_env)) fail_value(secret_env, "the name of an environment variable");
      if (const auto* ca_file = find(keys, "ca_file")) {
        destination.ca_file = non_empty_string(*ca_file);
        if (!destination.url.starts_with("https://")) fail_at(*ca_file, "applies to https:// URLs only");
        // Checked here so that a typo fails at start-up, naming the line, not at the first delivery.
        if (std::filesystem::is_directory(destination.ca_file)) {
          fail_at(*ca_file, "'" + destination.ca_file + "' is a folder, not a PEM file of trusted certificates");
        }
        if (!std::ifstream(destination.ca_file)) {
          fail_at(*ca_file, "cannot read '" + destination.ca_file + "': " + std::strerror(errno));
        }
      }
    } else {
      for (const auto key : {"url", "secret_env", "ca_file"}) {
        if (const auto* extra = find(keys, key)) fail_at(*extra, "a view destination takes only name and kind");
      }
    }
    return destination;
  }

  RelayConfig parse_relay(const Entry& map) const {
    RelayConfig relay;
    const auto keys =
        fields(map, {"max_attempts", "base_delay", "max_delay", "max_in_flight", "connect_timeout", "request_timeout"});
    if (const auto* entry = find(keys, "max_attempts")) {
      relay.max_attempts = static_cast<int>(integer_value(*entry, 1, 1000, "an integer from 1 to 1000"));
    }
    if (const auto* entry = find(keys, "base_delay")) relay.base_delay = duration_value(*entry);
    if (const auto* entry = find(keys, "max_delay")) relay.max_delay = duration_value(*entry);
    if (const auto* entry = find(keys, "max_in_flight")) {
      relay.max_in_flight = integer_value(*entry, 1, 1024, "an integer from 1 to 1024");
    }
    if (const auto* entry = find(keys, "connect_timeout")) relay.connect_timeout = duration_value(*entry);
    if (const auto* entry = find(keys, "request_timeout")) relay.request_timeout = duration_value(*entry);
    if (relay.max_delay < relay.base_delay) {
      if (const auto* max_delay = find(keys, "max_delay")) {
        fail_at(*max_delay, "must not be shorter than relay.base_delay");
      }
      fail_at(require(keys, map, "base_delay"), "must not be longer than relay.max_delay (5m by default)");
    }
    return relay;
  }

  std::string file_name_;
  struct Definition {
    int line = 0;  // of the destination's first definition
    DestinationKind kind = DestinationKind::kHttp;
  };
  std::map<std::string, Definition> destination_lines_;
};

}  // namespace

std::vector<std::string> PipelineConfig::destination_names() const {
  std::vector<std::string> names;
  for (const auto& destination : destinations) names.push_back(destination.name);
  return names;
}

std::string_view to_string(SourceKind kind) { return name_of(kind, kSourceKinds); }

std::string_view to_string(DestinationKind kind) { return name_of(kind, kDestinationKinds); }

std::string_view to_string(Trigger trigger) { return name_of(trigger, kTriggers); }

std::vector<std::string> Config::destination_names_of_kind(DestinationKind kind) const {
  std::vector<std::string> names;
  for (const auto& [name, destination] : destinations()) {
    if (destination.kind == kind) names.push_back(name);
  }
  return names;
}

std::vector<std::string> Config::destination_names(const std::string& pipeline) const {
  const auto found = pipelines.find(pipeline);
  return found == pipelines.end() ? std::vector<std::string>{} : found->second.destination_names();
}

std::vector<std::string> Config::pipelines_feeding(std::string_view destination) const {
  std::vector<std::string> feeders;
  for (const auto& [name, pipeline] : pipelines) {
    for (const auto& listed : pipeline.destinations) {
      if (listed.name == destination) feeders.push_back(name);
    }
  }
  return feeders;
}

const EntityDeclaration& Config::entity(std::string_view name) const {
  if (name == kBuiltInEntityName) return built_in_transaction_entity();
  return entities.at(std::string(name));
}

const EntityDeclaration& Config::entity_of(const std::string& pipeline) const {
  return entity(pipelines.at(pipeline).entity);
}

std::map<std::string, DestinationConfig> Config::destinations() const {
  std::map<std::string, DestinationConfig> out;
  for (const auto& [name, pipeline] : pipelines) {
    for (const auto& destination : pipeline.destinations) out.emplace(destination.name, destination);
  }
  return out;
}

Config parse_config(std::string_view yaml_text, std::string_view file_name) {
  Parser parser(file_name);
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(std::string(yaml_text));
  } catch (const YAML::Exception& error) {
    parser.fail(error.mark, "YAML syntax error: " + error.msg);
  }
  // A second document would otherwise be ignored without a word.
  if (documents.size() > 1) parser.fail(documents[1].Mark(), "a config file holds one YAML document; remove the '---'");
  return parser.parse(documents.empty() ? YAML::Node() : documents.front());
}

Config load_config(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError("cannot read config file " + path.string() + ": " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError("cannot read config file " + path.string() + ": " + std::strerror(errno));
  return parse_config(text.str(), path.string());
}

std::optional<Duration> parse_duration(std::string_view text) {
  struct Unit {
    std::string_view suffix;
    Duration::rep milliseconds;
  };
  // "ms" before "m" and "s": the longest suffix decides.
  static constexpr Unit kUnits[] = {{"ms", 1}, {"s", 1'000}, {"m", 60'000}, {"h", 3'600'000}};
  for (const auto& unit : kUnits) {
    if (!text.ends_with(unit.suffix)) continue;
    const auto count = parse_unsigned(text.substr(0, text.size() - unit.suffix.size()));
    const auto limit = static_cast<std::uint64_t>(std::numeric_limits<Duration::rep>::max() / unit.milliseconds);
    if (!count || *count > limit) return std::nullopt;
    return Duration(static_cast<Duration::rep>(*count) * unit.milliseconds);
  }
  return std::nullopt;
}

}  // namespace tidemark::pipeline
