#include "app/config/config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <limits>
#include <set>
#include <span>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "app/config/cron.hpp"
#include "connectors/nats_sink/subject.hpp"
#include "pipeline/core/names.hpp"

namespace tidemark::app::config {

using pipeline::built_in_transaction_entity;
using pipeline::check_table_unused;
using pipeline::extra_fields_from_string;
using pipeline::field_type_from_string;
using pipeline::FieldType;
using pipeline::FieldSpec;
using pipeline::format_duration;
using pipeline::is_name;
using pipeline::kBuiltInEntityName;
using pipeline::kFieldTypes;
using pipeline::kMaxDecimalPrecision;
using pipeline::parse_rejection_limit;
using pipeline::ViewColumn;
using pipeline::ViewFilter;
using pipeline::ViewPart;

namespace {

constexpr std::size_t kMaxBatchSize = 1'000'000;
constexpr std::size_t kMaxBatchBytes = std::size_t{1} << 30;
constexpr std::size_t kMaxNameLength = 64;

// Decimal digits only: no sign, no spaces, no base prefix. nullopt on overflow.
std::optional<std::uint64_t> parse_unsigned(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

bool is_env_var_name(std::string_view text) {
  return !text.empty() && !(text[0] >= '0' && text[0] <= '9') && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Each kind with its name (YAML, stored, printed): the one place either is spelt.
constexpr std::pair<std::string_view, Trigger> kTriggers[] = {
    {"cli", Trigger::kCli}, {"schedule", Trigger::kSchedule}, {"webhook", Trigger::kWebhook},
    {"stream", Trigger::kStream}};

template <typename Kind, std::size_t N>
std::string_view name_of(Kind kind, const std::pair<std::string_view, Kind> (&names)[N]) {
  for (const auto& [name, listed] : names) {
    if (listed == kind) return name;
  }
  return "unknown";  // only a value cast from outside the enumerators
}

std::string join(std::span<const std::string_view> words) {
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

// `${NAME}` and `${NAME:-default}` replaced by the variable's value (the default when it is
// unset or empty, as in the shell); `$${` is a literal `${`; any other `$` is itself. One
// pass: a value brought in is not interpolated again. nullopt and `error` set when malformed
// or when a variable without a default is unset.
std::optional<std::string> interpolate(std::string_view text, std::string& error) {
  constexpr std::string_view kForms = "${NAME} or ${NAME:-default}; write $${ for a literal ${";
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto dollar = text.find('$', at);
    if (dollar == std::string_view::npos) break;
    out += text.substr(at, dollar - at);
    if (text.substr(dollar).starts_with("$${")) {
      out += "${";
      at = dollar + 3;
      continue;
    }
    if (!text.substr(dollar).starts_with("${")) {
      out += '$';
      at = dollar + 1;
      continue;
    }
    const auto close = text.find('}', dollar);
    if (close == std::string_view::npos) {
      error = "'" + std::string(text.substr(dollar)) + "' has no closing '}' (expected " + std::string(kForms) + ")";
      return std::nullopt;
    }
    const std::string_view inside = text.substr(dollar + 2, close - dollar - 2);
    const auto separator = inside.find(":-");
    const std::string name(inside.substr(0, separator));
    if (!is_env_var_name(name)) {
      error = "'" + std::string(text.substr(dollar, close - dollar + 1)) + "' is not " + std::string(kForms) +
              " (NAME: letters, digits and '_', not starting with a digit)";
      return std::nullopt;
    }
    const char* value = std::getenv(name.c_str());
    if (separator != std::string_view::npos) {
      out += value != nullptr && *value != '\0' ? std::string_view(value) : inside.substr(separator + 2);
    } else if (value != nullptr) {
      out += value;
    } else {
      error = "environment variable " + name + " is not set (set it, or give a default: ${" + name + ":-VALUE})";
      return std::nullopt;
    }
    at = close + 1;
  }
  out += text.substr(std::min(at, text.size()));
  return out;
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

// Nodes by identity (YAML::Node::is: yaml-cpp shows no address to hash), kept in buckets by
// their place in the file, which an alias shares with its anchor: a lookup compares only the
// few nodes that start at one place, not every node so far, so that reading a file stays
// linear in its size (a list of 100k items took 35 s to check when it compared them all).
class NodeSet {
 public:
  // False when `node` was in already.
  bool insert(const YAML::Node& node) {
    auto& bucket = buckets_[node.Mark().pos];
    if (std::any_of(bucket.begin(), bucket.end(), [&](const YAML::Node& in) { return in.is(node); })) return false;
    bucket.push_back(node);
    return true;
  }
  bool contains(const YAML::Node& node) const {
    const auto bucket = buckets_.find(node.Mark().pos);
    return bucket != buckets_.end() && std::any_of(bucket->second.begin(), bucket->second.end(),
                                                   [&](const YAML::Node& in) { return in.is(node); });
  }

 private:
  std::unordered_map<int, std::vector<YAML::Node>> buckets_;
};

// An error at a line of the file (0-based, as in YAML::Mark), for sorting the errors.
struct LocatedError : ConfigError {
  LocatedError(int at, const std::string& message) : ConfigError(message), line(at) {}
  int line;
};

// The keys of a map; `unknown_keys` when some were refused, in which case a required key
// that is missing is most likely the one misspelt and is not reported a second time.
struct Fields {
  std::map<std::string, Entry, std::less<>> entries;
  bool unknown_keys = false;
};

class Parser;

// Each source kind as the config sees it: its YAML name, what it can do, and how its options
// are read (source_descriptors(), after the parser: one line per kind, in the order of
// SourceOptions' alternatives; app/wiring/registry.cpp says how each opens).
// How a partitioned kind (capabilities.partitioned) is read as partitions, in its own options:
// how many, each one's own options and name, and its workers' timings.
struct Partitioning {
  std::function<int(const SourceOptions&)> count;
  std::function<SourceOptions(const SourceOptions&, int partition)> partition;
  std::function<std::string(const SourceOptions&, int partition)> name;
  std::function<Duration(const SourceOptions&)> owner_timeout;
  std::function<Duration(const SourceOptions&)> rebalance_interval;
};

struct SourceDescriptor {
  std::string_view name;
  SourceCapabilities capabilities;
  SourceOptions (Parser::*read)(const Entry& map);
  Partitioning partitioning{};  // a partitioned kind's only
};
const std::vector<SourceDescriptor>& source_descriptors();

// "a, b or c".
template <typename Descriptor>
std::string kind_names(const std::vector<Descriptor>& kinds) {
  std::string names;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    if (i > 0) names += i + 1 == kinds.size() ? " or " : ", ";
    names += kinds[i].name;
  }
  return names;
}

// "file, postgres, http or nats": the kinds a source may name.
std::string source_kind_names() { return kind_names(source_descriptors()); }

// Each destination kind as the config sees it: its YAML name, what it can do, its own keys and
// how its options are read from them (destination_descriptors(), after the parser: one line
// per kind, in the order of DestinationOptions' alternatives; app/wiring/registry.cpp says how
// each kind's sinks open).
struct DestinationDescriptor {
  std::string_view name;
  DestinationCapabilities capabilities;
  std::vector<std::string_view> keys;
  std::function<DestinationOptions(Parser&, const Entry& map, const Fields& keys)> read;
};
const std::vector<DestinationDescriptor>& destination_descriptors();

// Parsing goes on after an error wherever what follows does not depend on the part that
// failed (each section, entity, pipeline, key of a pipeline, destination and relay setting),
// so that one pass reports every error of the file (`tidemark check`).
class Parser {
 public:
  explicit Parser(std::string_view file_name) : file_name_(file_name) {}

  Config parse(YAML::Node root) {
    Config config;
    if (root.IsNull()) return config;  // an empty file: every default
    interpolate_values(root, "");
    attempt([&] {
      const auto top = fields({YAML::Node(), root, ""},
                              {"database", "log", "http", "entities", "views", "pipelines", "relay", "retention"});
      if (const auto* database = find(top, "database")) {
        attempt([&] { config.database = non_empty_string(*database); });
      }
      if (const auto* log = find(top, "log")) attempt([&] { config.log = parse_log(*log); });
      if (const auto* http = find(top, "http")) attempt([&] { config.http = parse_http(*http); });
      // Before the pipelines, wherever the file has them: a pipeline names its entity.
      if (const auto* entities = find(top, "entities")) attempt([&] { parse_entities(*entities, config); });
      // After the entities (a view names one), before the pipelines (a destination may not
      // take a view's name).
      if (const auto* views = find(top, "views")) attempt([&] { parse_views(*views, config); });
      // Before the pipelines too: a destination's window is checked against the relay's,
      // unless the relay section has errors of its own (its window may be one of them).
      const std::size_t errors_before_relay = errors_.size();
      if (const auto* relay = find(top, "relay")) attempt([&] { config.relay = parse_relay(*relay); });
      if (errors_.size() == errors_before_relay) relay_max_in_flight_ = config.relay.max_in_flight;
      if (const auto* pipelines = find(top, "pipelines")) attempt([&] { parse_pipelines(*pipelines, config); });
      if (const auto* retention = find(top, "retention")) {
        attempt([&] { config.retention = parse_retention(*retention); });
      }
    });
    return config;
  }

  [[noreturn]] void fail(const YAML::Mark& mark, std::string_view message) const {
    throw LocatedError(mark.line, message_at(mark, message));
  }

  // Every error so far, in line order (sections are parsed in a fixed order, not the file's).
  std::vector<std::string> errors() const {
    auto sorted = errors_;
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> messages;
    for (auto& [line, message] : sorted) messages.push_back(std::move(message));
    return messages;
  }

 private:
  // A part of the file given up without an error of its own: another error already says
  // what is wrong with it (see `require`).
  struct AlreadyReported {};

  std::string message_at(const YAML::Mark& mark, std::string_view message) const {
    return file_name_ + ":" + std::to_string(mark.line + 1) + ": " + std::string(message);
  }

  // An error that does not stop the part being parsed.
  void report(const YAML::Mark& mark, std::string_view message) {
    errors_.emplace_back(mark.line, message_at(mark, message));
  }

  // Runs `part`; an error it throws is recorded, and parsing goes on after it. False then.
  template <typename Part>
  bool attempt(Part&& part) {
    try {
      part();
      return true;
    } catch (const LocatedError& error) {
      errors_.emplace_back(error.line, error.what());
    } catch (const AlreadyReported&) {
    }
    return false;
  }

  // A value whose interpolation failed has its error already: what it holds instead (the
  // text as written) is not reported a second time.
  void abandon_if_uninterpolated(const Entry& entry) const {
    if (uninterpolated_.contains(entry.value)) throw AlreadyReported{};
  }

  // Each scalar value of the document (not the keys) with its `${...}` replaced, before any
  // value is read; a node reached twice (a YAML alias) is replaced once.
  void interpolate_values(YAML::Node node, const std::string& path) {
    if (!interpolated_.insert(node)) return;
    if (node.IsMap()) {
      for (auto pair : node) {
        interpolate_values(pair.second, child_path(path, pair.first.IsScalar() ? pair.first.Scalar() : "?"));
      }
    } else if (node.IsSequence()) {
      for (std::size_t i = 0; i < node.size(); ++i) interpolate_values(node[i], path + "[" + std::to_string(i) + "]");
    } else if (node.IsScalar() && node.Scalar().find('$') != std::string::npos) {
      std::string error;
      if (const auto value = interpolate(node.Scalar(), error)) {
        node = *value;  // the node keeps its position for later messages
      } else {
        report(node.Mark(), (path.empty() ? "" : path + ": ") + error);
        uninterpolated_.insert(node);
      }
    }
  }

  // A value error points at a scalar value itself, else at its key: a map or list value
  // starts on a later line, and a missing value has no position of its own.
  static YAML::Mark mark_of(const Entry& entry) {
    if (entry.value.IsDefined() && entry.value.IsScalar()) return entry.value.Mark();
    if (entry.key.IsDefined() && !entry.key.Mark().is_null()) return entry.key.Mark();
    return entry.value.Mark();
  }

  // The 1-based line mark_of names, as a message says it.
  static int line_of(const Entry& entry) { return mark_of(entry).line + 1; }

  // Key `key` of map `parent` with its value; `parent` itself when it has no such key.
  static Entry child_entry(const Entry& parent, std::string_view key) {
    if (!parent.value.IsMap()) return parent;
    for (const auto& pair : parent.value) {
      if (pair.first.IsScalar() && pair.first.Scalar() == key) {
        return {pair.first, pair.second, child_path(parent.path, key)};
      }
    }
    return parent;
  }

  // "pipelines.p.batch_size: "; nothing for the document itself.
  static std::string key_prefix(const Entry& entry) { return entry.path.empty() ? "" : entry.path + ": "; }

  // `why`, when given, follows in parentheses.
  [[noreturn]] void fail_value(const Entry& entry, std::string_view expected, std::string_view why = "") const {
    abandon_if_uninterpolated(entry);
    fail(mark_of(entry), key_prefix(entry) + "expected " + std::string(expected) + ", got " + describe(entry.value) +
                             (why.empty() ? "" : " (" + std::string(why) + ")"));
  }

  [[noreturn]] void fail_at(const Entry& entry, std::string_view problem) const {
    abandon_if_uninterpolated(entry);
    fail(mark_of(entry), key_prefix(entry) + std::string(problem));
  }

  static const Entry* find(const Fields& fields, std::string_view key) {
    const auto it = fields.entries.find(key);
    return it == fields.entries.end() ? nullptr : &it->second;
  }

  const Entry& require(const Fields& fields, const Entry& map, std::string_view key) const {
    const auto* entry = find(fields, key);
    if (entry == nullptr) {
      if (fields.unknown_keys) throw AlreadyReported{};
      fail(map.value.Mark(), key_prefix(map) + "missing required key '" + std::string(key) + "'");
    }
    return *entry;
  }

  // The keys of a map, each checked against `allowed` (strict: a typo is an error, not a
  // silently ignored setting). `secret_hint` is appended when an unknown key looks like a secret.
  // An unknown or repeated key is reported and left out; the others are parsed.
  Fields fields(const Entry& map, std::initializer_list<std::string_view> allowed,
                std::string_view secret_hint = "") {
    return fields(map, std::span<const std::string_view>(allowed.begin(), allowed.size()), secret_hint);
  }

  Fields fields(const Entry& map, std::span<const std::string_view> allowed, std::string_view secret_hint = "") {
    if (!map.value.IsMap()) fail_value(map, "a map with keys " + join(allowed));
    Fields out;
    for (const auto& pair : map.value) {
      const std::string where = map.path.empty() ? "at the top level" : "in " + map.path;
      if (!pair.first.IsScalar()) {
        report(pair.first.Mark(), "a key " + where + " is " + describe(pair.first) + ", not a name");
        out.unknown_keys = true;
        continue;
      }
      const std::string key = pair.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        report(pair.first.Mark(), "unknown key '" + key + "' " + where + " (expected one of: " + join(allowed) + ")" +
                                      (key.find("secret") == std::string::npos ? "" : std::string(secret_hint)));
        out.unknown_keys = true;
        continue;
      }
      if (const auto* earlier = find(out, key)) {
        report(pair.first.Mark(), "duplicate key '" + key + "' " + where + " (first at line " +
                                      std::to_string(earlier->key.Mark().line + 1) + ")");
        continue;
      }
      out.entries.emplace(key, Entry{pair.first, pair.second, child_path(map.path, key)});
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

  std::string http_url(const Entry& entry) const {
    auto url = string_value(entry);
    if (!url.starts_with("http://") && !url.starts_with("https://")) {
      fail_value(entry, "a URL starting with http:// or https://");
    }
    return url;
  }

  std::string env_var_name(const Entry& entry) const {
    auto name = string_value(entry);
    if (!is_env_var_name(name)) fail_value(entry, "the name of an environment variable");
    return name;
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

  // ---- Declared fields: each key of a section spelt once, beside how its value is read ----

  // One key of a section (of the options `Options`) and how its value is read into them.
  template <typename Options>
  struct Field {
    std::string_view key;
    std::function<void(Parser&, const Entry&, Options&)> read;
    // A missing key is an error (unless a misspelt key explains it) that ends the section.
    bool required = false;
    // When the key is missing: a default taken from the keys read before it, or an error that
    // leaves the other keys to be read.
    std::function<void(Parser&, const Entry& map, const Fields& keys, Options&)> absent;
  };

  // What reading a section found: its keys, and those whose value was refused.
  struct ReadFields {
    Fields keys;
    std::set<std::string_view> failed;
    bool read(std::string_view key) const { return !failed.contains(key); }
  };

  // Whether a section's other keys are read after one fails: each on its own, or not (the
  // first error ends the section, where a later key means little without the earlier ones).
  enum class Reading { kEachOnItsOwn, kUntilAnError };

  // Reads the keys `schema` declares into `options`, in its order: the section takes those
  // keys and no others, and by default each is read on its own (one that fails keeps its
  // default, and the others are still read). A required key that is missing ends the section.
  template <typename Options>
  ReadFields read_fields(const Entry& map, const std::vector<Field<Options>>& schema, Options& options,
                         Reading reading = Reading::kEachOnItsOwn, std::string_view secret_hint = "") {
    ReadFields out{fields(map, keys_of(schema), secret_hint), {}};
    read_declared(map, out, schema, options, reading);
    return out;
  }

  // The keys of `read.keys` that `schema` declares, read into `options` in its order.
  template <typename Options>
  void read_declared(const Entry& map, ReadFields& read, const std::vector<Field<Options>>& schema, Options& options,
                     Reading reading) {
    for (const auto& field : schema) {
      const Entry* entry = field.required ? &require(read.keys, map, field.key) : find(read.keys, field.key);
      if (entry == nullptr && !field.absent) continue;
      const auto read_one = [&] {
        entry != nullptr ? field.read(*this, *entry, options) : field.absent(*this, map, read.keys, options);
      };
      if (reading == Reading::kUntilAnError) {
        read_one();
      } else if (!attempt(read_one)) {
        read.failed.insert(field.key);
      }
    }
  }

  template <typename Options>
  static std::vector<std::string_view> keys_of(const std::vector<Field<Options>>& schema) {
    std::vector<std::string_view> keys;
    for (const auto& field : schema) keys.push_back(field.key);
    return keys;
  }

  // A declared kind of destination: its own fields read until an error (docs/delivery.md).
  template <typename Options>
  static DestinationDescriptor destination_kind(std::string_view name, DestinationCapabilities capabilities,
                                                std::vector<Field<Options>> schema) {
    auto keys = keys_of(schema);
    return {name, capabilities, std::move(keys),
            [schema = std::move(schema)](Parser& parser, const Entry& map, const Fields& keys) -> DestinationOptions {
              ReadFields read{keys, {}};
              Options options;
              parser.read_declared(map, read, schema, options, Reading::kUntilAnError);
              return options;
            }};
  }

  // The type an option holds: a std::optional's value type, else itself.
  template <typename Value>
  struct Held {
    using type = Value;
  };
  template <typename Value>
  struct Held<std::optional<Value>> {
    using type = Value;
  };

  // A positive duration (250ms, 30s, 5m, 2h).
  template <typename Options, typename Value>
  static Field<Options> duration_field(std::string_view key, Value Options::*member) {
    return {key, [member](Parser& parser, const Entry& entry, Options& options) {
              options.*member = parser.duration_value(entry);
            }};
  }

  // An integer from `min` to `max`; `expected` says so in the message.
  template <typename Options, typename Value>
  static Field<Options> integer_field(std::string_view key, Value Options::*member, std::uint64_t min,
                                      std::uint64_t max, std::string expected) {
    return {key, [member, min, max, expected](Parser& parser, const Entry& entry, Options& options) {
              options.*member = static_cast<typename Held<Value>::type>(parser.integer_value(entry, min, max, expected));
            }};
  }

  template <typename Options>
  static Field<Options> boolean_field(std::string_view key, bool Options::*member) {
    return {key, [member](Parser& parser, const Entry& entry, Options& options) {
              options.*member = parser.boolean_value(entry);
            }};
  }

  // One of `names`, kept as written.
  template <typename Options, typename Value>
  static Field<Options> one_of_field(std::string_view key, Value Options::*member,
                                     std::vector<std::string_view> names) {
    return {key, [member, names](Parser& parser, const Entry& entry, Options& options) {
              const auto text = parser.string_value(entry);
              if (std::find(names.begin(), names.end(), text) == names.end()) {
                parser.fail_value(entry, "one of " + join(names));
              }
              options.*member = text;
            }};
  }

  // A key the section takes but reads elsewhere (a source's `kind`).
  template <typename Options>
  static Field<Options> read_elsewhere(std::string_view key) {
    return {key, [](Parser&, const Entry&, Options&) {}};
  }

  HttpConfig parse_http(const Entry& map) {
    static const std::vector<Field<HttpConfig>> schema = {
        {"listen",
         [](Parser& parser, const Entry& listen, HttpConfig& http) {
           const auto text = parser.string_value(listen);
           const auto colon = text.rfind(':');
           const auto port =
               colon == std::string::npos ? std::nullopt : parse_unsigned(std::string_view(text).substr(colon + 1));
           if (colon == 0 || !port || *port > 65535) parser.fail_value(listen, "HOST:PORT (e.g. 127.0.0.1:8080)");
           http.listen = text;
         }},
        integer_field("max_connections", &HttpConfig::max_connections, 1, 1000000, "an integer from 1 to 1000000"),
        boolean_field("allow_unauthenticated", &HttpConfig::allow_unauthenticated),
        {"allowed_hosts",
         [](Parser& parser, const Entry& list, HttpConfig& http) {
           if (!list.value.IsSequence()) parser.fail_value(list, "a list of host names, e.g. [tidemark.internal]");
           for (std::size_t i = 0; i < list.value.size(); ++i) {
             const Entry item{list.key, list.value[i], list.path + "[" + std::to_string(i) + "]"};
             const std::string name = parser.string_value(item);
             // A name or an IPv4 address (letters, digits, '.', '-'), or an IPv6 address in brackets: no port.
             const bool bracketed = name.size() > 2 && name.front() == '[' && name.back() == ']' &&
                                    name.find_first_not_of("0123456789abcdefABCDEF:.", 1) == name.size() - 1;
             if (!bracketed &&
                 (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789.-") != std::string::npos)) {
               parser.fail_value(item, "a host name without a port (tidemark.internal, 10.0.0.5, [fd00::5])");
             }
             http.allowed_hosts.push_back(name);
           }
         }},
    };
    HttpConfig http;
    read_fields(map, schema, http);
    return http;
  }

  // The names the --log-level and --log-format options take (app/cli/logging.cpp): checked
  // here so that a bad value is a config error at its line, like any other.
  LogConfig parse_log(const Entry& map) {
    static const std::vector<Field<LogConfig>> schema = {
        one_of_field("level", &LogConfig::level, {"trace", "debug", "info", "warn", "error"}),
        one_of_field("format", &LogConfig::format, {"text", "json"}),
    };
    LogConfig log;
    read_fields(map, schema, log);
    return log;
  }

  RetentionConfig parse_retention(const Entry& map) {
    static const std::vector<Field<RetentionConfig>> schema = {
        duration_field("outbox", &RetentionConfig::outbox),
        duration_field("runs", &RetentionConfig::runs),
        duration_field("quarantine", &RetentionConfig::quarantine),
        duration_field("requests", &RetentionConfig::requests),
        duration_field("inbox", &RetentionConfig::inbox),
    };
    RetentionConfig retention;
    read_fields(map, schema, retention);
    return retention;
  }

  // Each declared entity, checked by the core's rules (pipeline/core/entity.hpp); an error
  // points at the line of the part it is about.
  void parse_entities(const Entry& map, Config& config) {
    if (!map.value.IsMap()) fail_value(map, "a map from entity name to its declaration");
    for (const auto& pair : map.value) {
      if (!pair.first.IsScalar()) {
        report(pair.first.Mark(), map.path + ": an entity name is " + describe(pair.first));
        continue;
      }
      const std::string name = pair.first.Scalar();
      if (config.entities.contains(name) || failed_entities_.contains(name)) {
        report(pair.first.Mark(), "duplicate key '" + name + "' in " + map.path);
        continue;
      }
      const bool parsed = attempt([&] {
        const Entry entry{pair.first, pair.second, child_path(map.path, name)};
        EntityDeclaration entity = parse_entity(entry, name);
        if (const auto error = check_table_unused(config.entities, entity)) {
          fail_at(entity_part(entry, DeclarationPart::kTable, ""), *error);
        }
        config.entities.emplace(name, std::move(entity));
      });
      // A pipeline that names it is not told again that the entity is unknown.
      if (!parsed) failed_entities_.insert(name);
    }
  }

  EntityDeclaration parse_entity(const Entry& map, const std::string& name) {
    static const std::vector<Field<EntityDeclaration>> schema = {
        {"table", [](Parser& parser, const Entry& table, EntityDeclaration& entity) {
           entity.table = parser.string_value(table);
         }},
        {"key", [](Parser& parser, const Entry& key, EntityDeclaration& entity) { entity.key = parser.string_value(key); },
         true},
        {"revision",
         [](Parser& parser, const Entry& revision, EntityDeclaration& entity) {
           entity.revision = parser.string_value(revision);
         },
         true},
        {"partition_by",
         [](Parser& parser, const Entry& partition_by, EntityDeclaration& entity) {
           entity.partition_by = parser.string_value(partition_by);
         },
         false, [](Parser&, const Entry&, const Fields&, EntityDeclaration& entity) { entity.partition_by = entity.key; }},
        {"extra_fields",
         [](Parser& parser, const Entry& extra_fields, EntityDeclaration& entity) {
           const auto mode = extra_fields_from_string(parser.string_value(extra_fields));
           if (!mode) parser.fail_value(extra_fields, "ignore, reject or keep");
           entity.extra_fields = *mode;
         }},
        {"fields",
         [](Parser& parser, const Entry& declared, EntityDeclaration& entity) {
           if (!declared.value.IsMap()) parser.fail_value(declared, "a map from field name to its type and rules");
           for (const auto& pair : declared.value) {
             if (!pair.first.IsScalar()) {
               parser.fail(pair.first.Mark(), declared.path + ": a field name is " + describe(pair.first));
             }
             const std::string field = pair.first.Scalar();
             if (entity.field(field) != nullptr) {
               parser.fail(pair.first.Mark(), "duplicate key '" + field + "' in " + declared.path);
             }
             entity.fields.push_back(parser.parse_field({pair.first, pair.second, child_path(declared.path, field)}, field));
           }
         }},
    };
    EntityDeclaration entity;
    entity.name = name;
    entity.table = name;
    read_fields(map, schema, entity, Reading::kUntilAnError);
    if (const auto error = check_declared_entity(entity)) {
      fail_at(entity_part(map, error->part, error->field), error->message);
    }
    // For messages about the entity after parsing (`check` against its table); each field
    // keeps its own (parse_field).
    entity.lines = {.name = line_of(map),
                    .key = line_of(child_entry(map, "key")),
                    .revision = line_of(child_entry(map, "revision")),
                    .extra_fields = line_of(child_entry(map, "extra_fields"))};
    return entity;
  }

  FieldSpec parse_field(const Entry& map, const std::string& name) {
    // Each rule belongs to one type: on another it would be silently meaningless. The ranges
    // are the core's to check (check_declared_entity), with one message for them.
    const auto decimal_rule = [](int FieldSpec::*rule) {
      return [rule](Parser& parser, const Entry& entry, FieldSpec& field) {
        if (field.type != FieldType::kDecimal) parser.fail_at(entry, "applies to decimal fields only");
        field.*rule = static_cast<int>(parser.integer_value(entry, 0, std::numeric_limits<int>::max(), "a whole number"));
      };
    };
    static const std::vector<Field<FieldSpec>> schema = {
        {"type",
         [](Parser& parser, const Entry& type, FieldSpec& field) {
           const auto parsed = field_type_from_string(parser.string_value(type));
           if (!parsed) parser.fail_value(type, field_type_names());
           field.type = *parsed;
         },
         true},
        boolean_field("required", &FieldSpec::required),
        {"max_length",
         [](Parser& parser, const Entry& max_length, FieldSpec& field) {
           if (field.type != FieldType::kText) parser.fail_at(max_length, "applies to text fields only");
           field.max_length = parser.integer_value(max_length, 0, std::numeric_limits<std::size_t>::max(), "a whole number");
         }},
        {"precision", decimal_rule(&FieldSpec::precision), false,
         [](Parser& parser, const Entry& map, const Fields&, FieldSpec& field) {
           if (field.type != FieldType::kDecimal) return;
           parser.fail_at(map, "a decimal field needs a precision (1 to " + std::to_string(kMaxDecimalPrecision) +
                                   "), e.g. {type: decimal, precision: 12, scale: 2}");
         }},
        {"scale", decimal_rule(&FieldSpec::scale)},
    };
    FieldSpec field;
    field.name = name;
    field.line = line_of(map);
    read_fields(map, schema, field, Reading::kUntilAnError);
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
    const auto key_of = child_entry;
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

  // Each declared view, checked by the core's rules (pipeline/core/view_declaration.hpp)
  // against its entity; an error points at the line of the part it is about.
  void parse_views(const Entry& map, Config& config) {
    if (!map.value.IsMap()) fail_value(map, "a map from view name to its declaration");
    for (const auto& pair : map.value) {
      if (!pair.first.IsScalar()) {
        report(pair.first.Mark(), map.path + ": a view name is " + describe(pair.first));
        continue;
      }
      const std::string name = pair.first.Scalar();
      if (!view_lines_.emplace(name, pair.first.Mark().line + 1).second) {
        report(pair.first.Mark(), "duplicate key '" + name + "' in " + map.path);
        continue;
      }
      attempt([&] {
        config.views.emplace(name, parse_view({pair.first, pair.second, child_path(map.path, name)}, name, config));
      });
    }
  }

  ViewDeclaration parse_view(const Entry& map, const std::string& name, const Config& config) {
    static const std::vector<Field<ViewDeclaration>> schema = {
        {"entity",
         [](Parser& parser, const Entry& entity, ViewDeclaration& view) { view.entity = parser.string_value(entity); },
         true},
        {"group_by",
         [](Parser& parser, const Entry& group_by, ViewDeclaration& view) {
           if (group_by.value.IsScalar() && group_by.value.Scalar() == "partition") {
             view.by_partition = true;
             return;
           }
           if (!group_by.value.IsSequence()) {
             parser.fail_value(group_by, "a list of fields, e.g. [customer_id], or partition");
           }
           view.group_by = parser.string_list(group_by);
         },
         true},
        {"where", [](Parser& parser, const Entry& where, ViewDeclaration& view) { parser.parse_where(where, view); }},
        {"columns",
         [](Parser& parser, const Entry& columns, ViewDeclaration& view) { parser.parse_columns(columns, view); },
         true},
    };
    ViewDeclaration view;
    view.name = name;
    read_fields(map, schema, view, Reading::kUntilAnError);
    const Entry entity_entry = child_entry(map, "entity");
    const EntityDeclaration* entity = config.find_entity(view.entity);
    if (entity == nullptr) {
      if (failed_entities_.contains(view.entity)) throw AlreadyReported{};  // its declaration's error says why
      fail_at(entity_entry, "unknown entity '" + view.entity + "' (" + declared_entities(config.entities) + ")");
    }
    if (const auto error = pipeline::check_view(view, *entity)) fail_at(view_part(map, view, *error), error->message);
    if (const auto error = pipeline::check_view_tables_unused(config.entities, view)) fail_at(map, *error);
    view.lines = {
        .name = line_of(map), .entity = line_of(entity_entry), .group_by = line_of(child_entry(map, "group_by"))};
    return pipeline::with_canonical_values(std::move(view), *entity);
  }

  // Each item of a list, as a string; a message names the item (`group_by[1]`).
  std::vector<std::string> string_list(const Entry& list) const {
    std::vector<std::string> items;
    for (std::size_t i = 0; i < list.value.size(); ++i) {
      items.push_back(string_value({list.key, list.value[i], list.path + "[" + std::to_string(i) + "]"}));
    }
    return items;
  }

  // `where:`: `F: V` and `F: [V, ...]` (equality, IN), `F: {OP: V, ...}` (one filter per
  // comparison); all are ANDed. The values as written: check_view checks them for the field.
  void parse_where(const Entry& where, ViewDeclaration& view) const {
    if (!where.value.IsMap()) fail_value(where, "a map from field to a value, a list of values or {OP: value}");
    std::set<std::string> fields;
    for (const auto& pair : where.value) {
      if (!pair.first.IsScalar()) fail(pair.first.Mark(), where.path + ": a field name is " + describe(pair.first));
      if (!fields.insert(pair.first.Scalar()).second) {
        fail(pair.first.Mark(), "duplicate key '" + pair.first.Scalar() + "' in " + where.path);
      }
      const Entry condition{pair.first, pair.second, child_path(where.path, pair.first.Scalar())};
      const std::string field = pair.first.Scalar();
      if (condition.value.IsScalar()) {
        view.filters.push_back({.field = field, .values = {condition.value.Scalar()}, .line = line_of(condition)});
      } else if (condition.value.IsSequence()) {
        view.filters.push_back({.field = field, .values = string_list(condition), .line = line_of(condition)});
      } else if (condition.value.IsMap()) {
        for (const auto& comparison : condition.value) {
          const auto op = comparison.first.IsScalar()
                              ? pipeline::filter_comparison_from_string(comparison.first.Scalar())
                              : std::nullopt;
          if (!op) {
            fail(comparison.first.Mark(),
                 condition.path + ": expected a comparison <, <=, > or >=, got " + describe(comparison.first));
          }
          const Entry bound{comparison.first, comparison.second, condition.path + "." + comparison.first.Scalar()};
          view.filters.push_back(
              {.field = field, .op = *op, .values = {string_value(bound)}, .line = line_of(bound)});
        }
      } else {
        fail_value(condition, "a value, a list of values or {OP: value} with OP <, <=, > or >=");
      }
    }
  }

  // `columns:`: `NAME: count | sum(FIELD) | min(FIELD) | max(FIELD)`, in the order written.
  void parse_columns(const Entry& columns, ViewDeclaration& view) const {
    constexpr std::string_view kExpected = "count, sum(FIELD), min(FIELD) or max(FIELD)";
    if (!columns.value.IsMap()) fail_value(columns, "a map from column name to " + std::string(kExpected));
    for (const auto& pair : columns.value) {
      if (!pair.first.IsScalar()) fail(pair.first.Mark(), columns.path + ": a column name is " + describe(pair.first));
      if (std::any_of(view.columns.begin(), view.columns.end(),
                      [&](const ViewColumn& column) { return column.name == pair.first.Scalar(); })) {
        fail(pair.first.Mark(), "duplicate key '" + pair.first.Scalar() + "' in " + columns.path);
      }
      const Entry column{pair.first, pair.second, child_path(columns.path, pair.first.Scalar())};
      const auto aggregate = pipeline::parse_view_aggregate(string_value(column));
      if (!aggregate) fail_value(column, kExpected);
      view.columns.push_back({.name = pair.first.Scalar(),
                              .aggregate = aggregate->first,
                              .field = aggregate->second,
                              .line = line_of(column)});
    }
  }

  // "declared: a, b; transaction is the built-in one", for a message about an unknown entity.
  static std::string declared_entities(const std::map<std::string, EntityDeclaration>& entities) {
    std::string declared;
    for (const auto& [declared_name, declaration] : entities) {
      declared += (declared.empty() ? "" : ", ") + declared_name;
    }
    return (declared.empty() ? "none is declared under entities" : "declared: " + declared) + "; " +
           std::string(kBuiltInEntityName) + " is the built-in one";
  }

  // The entry of a view's declaration that `error` is about: its item (a group_by entry, a
  // where condition, a column), else the key, else the view's name.
  static Entry view_part(const Entry& map, const ViewDeclaration& view, const pipeline::ViewDeclarationError& error) {
    const auto key_of = child_entry;
    const bool whole = error.index == pipeline::kWholePart;
    switch (error.part) {
      case ViewPart::kName: return map;
      case ViewPart::kEntity: return key_of(map, "entity");
      case ViewPart::kGroupBy: {
        const Entry group_by = key_of(map, "group_by");
        if (whole || !group_by.value.IsSequence() || error.index >= group_by.value.size()) return group_by;
        return {group_by.key, group_by.value[error.index], group_by.path + "[" + std::to_string(error.index) + "]"};
      }
      case ViewPart::kFilter: {
        const Entry where = key_of(map, "where");
        return whole || error.index >= view.filters.size() ? where : key_of(where, view.filters[error.index].field);
      }
      case ViewPart::kColumn: {
        const Entry columns = key_of(map, "columns");
        return whole || error.index >= view.columns.size() ? columns : key_of(columns, view.columns[error.index].name);
      }
    }
    return map;
  }

  void parse_pipelines(const Entry& map, Config& config) {
    if (!map.value.IsMap()) fail_value(map, "a map from pipeline name to its settings");
    std::set<std::string> seen;
    for (const auto& pair : map.value) {
      if (!pair.first.IsScalar() || !is_valid_name(pair.first.Scalar())) {
        report(pair.first.Mark(),
               map.path + ": invalid pipeline name " + describe(pair.first) + " (" + std::string(kNameRule) + ")");
        continue;
      }
      const std::string name = pair.first.Scalar();
      if (!seen.insert(name).second) {
        report(pair.first.Mark(), "duplicate key '" + name + "' in " + map.path);
        continue;
      }
      attempt([&] {
        config.pipelines.emplace(
            name, parse_pipeline({pair.first, pair.second, child_path(map.path, name)}, name, config.entities));
      });
    }
  }

  PipelineConfig parse_pipeline(const Entry& map, const std::string& name,
                                const std::map<std::string, EntityDeclaration>& entities) {
    const std::vector<Field<PipelineConfig>> schema = {
        {"entity",
         [&entities](Parser& parser, const Entry& entity, PipelineConfig& pipeline) {
           pipeline.entity = parser.string_value(entity);
           if (pipeline.entity != kBuiltInEntityName && !entities.contains(pipeline.entity) &&
               !parser.failed_entities_.contains(pipeline.entity)) {
             parser.fail_at(entity, "unknown entity '" + pipeline.entity + "' (" + declared_entities(entities) + ")");
           }
         }},
        // Missing, it is reported and the other keys are still read.
        {"source",
         [](Parser& parser, const Entry& source, PipelineConfig& pipeline) { pipeline.source = parser.parse_source(source); },
         false,
         [](Parser& parser, const Entry& map, const Fields& keys, PipelineConfig&) { parser.require(keys, map, "source"); }},
        integer_field("batch_size", &PipelineConfig::batch_size, 1, kMaxBatchSize,
                      "a positive integer (at most " + std::to_string(kMaxBatchSize) + ")"),
        integer_field("max_batch_bytes", &PipelineConfig::max_batch_bytes, 1, kMaxBatchBytes,
                      "a number of bytes from 1 to " + std::to_string(kMaxBatchBytes)),
        {"max_rejected",
         [](Parser& parser, const Entry& max_rejected, PipelineConfig& pipeline) {
           pipeline.max_rejected =
               max_rejected.value.IsScalar() ? parse_rejection_limit(max_rejected.value.Scalar()) : std::nullopt;
           if (!pipeline.max_rejected) parser.fail_value(max_rejected, "a count (e.g. 100) or a percentage (e.g. 5%)");
         }},
        {"schedule",
         [](Parser& parser, const Entry& schedule, PipelineConfig& pipeline) {
           pipeline.schedule = parser.parse_schedule(schedule);
           // serve starts a partitioned pipeline's runs itself, whenever a partition it owns has news.
           if (pipeline.source.capabilities().partitioned) {
             parser.fail_at(schedule, "a " + std::string(pipeline.source.kind()) +
                                          " pipeline takes no schedule: serve consumes its partitions continuously "
                                          "(docs/scale-out.md \"serve\")");
           }
         }},
        {"destinations",
         [](Parser& parser, const Entry& destinations, PipelineConfig& pipeline) {
           pipeline.destinations = parser.parse_destinations(destinations, pipeline.entity);
         }},
    };
    PipelineConfig pipeline;
    pipeline.name = name;
    read_fields(map, schema, pipeline);
    return pipeline;
  }

  SourceConfig parse_source(const Entry& map) {
    // The kind decides which other keys a source takes; a source without one (or with one
    // that no kind has, which the first kind's reader reports) reads files.
    const auto& kinds = source_descriptors();
    if (map.value.IsMap()) {
      if (const YAML::Node kind = map.value["kind"]; kind && kind.IsScalar()) {
        for (const auto& descriptor : kinds) {
          if (descriptor.name == kind.Scalar()) return {(this->*descriptor.read)(map)};
        }
      }
    }
    return {(this->*kinds.front().read)(map)};
  }

  friend const std::vector<SourceDescriptor>& source_descriptors();

  // kind: file (connectors/file/options.hpp).
  SourceOptions parse_file_source(const Entry& map) {
    using connectors::file::FileSourceOptions;
    static const std::vector<Field<FileSourceOptions>> schema = {
        // A source whose kind no kind has is read as a file source, which says so.
        {"kind",
         [](Parser& parser, const Entry& kind, FileSourceOptions&) {
           if (parser.string_value(kind) != "file") parser.fail_value(kind, source_kind_names());
         }},
        {"path", [](Parser& parser, const Entry& path, FileSourceOptions& file) { file.path = parser.non_empty_string(path); },
         true},
        {"format",
         [](Parser& parser, const Entry& format, FileSourceOptions& file) {
           const auto parsed = connectors::file::parse_format(parser.string_value(format));
           if (!parsed) parser.fail_value(format, "csv or jsonl");
           file.format = *parsed;
         },
         false,
         [](Parser& parser, const Entry& map, const Fields&, FileSourceOptions& file) {
           const auto inferred =
               connectors::file::format_from_extension(file.path, connectors::file::ExtensionCase::kIgnore);
           if (!inferred) {
             parser.fail_at(map, "cannot tell the format of '" + file.path +
                                     "' from its extension (.csv, .jsonl, .ndjson): add format: csv or format: jsonl");
           }
           file.format = *inferred;
         }},
        {"settle",
         [](Parser& parser, const Entry& settle, FileSourceOptions& file) {
           // Zero is allowed here (unlike other durations): it reads a last line at once.
           const auto value = settle.value.IsScalar() ? parse_duration(settle.value.Scalar()) : std::nullopt;
           if (!value) parser.fail_value(settle, "a duration: an integer with a unit ms, s, m or h (e.g. 2s, 0s)");
           file.settle = *value;
         }},
        {"on_change",
         [](Parser& parser, const Entry& on_change, FileSourceOptions& file) {
           const auto parsed = connectors::file::parse_change_policy(parser.string_value(on_change));
           if (!parsed) parser.fail_value(on_change, "reread or fail");
           file.on_change = *parsed;
         }},
    };
    FileSourceOptions file;
    read_fields(map, schema, file, Reading::kUntilAnError);
    return file;
  }

  // kind: postgres (connectors/postgres/options.hpp). What only the source database's catalog
  // can tell (the columns, their types, a unique cursor) is checked when the source opens.
  SourceOptions parse_postgres_source(const Entry& map) {
    using connectors::postgres::Consistency;
    using connectors::postgres::Options;
    static const std::vector<Field<Options>> schema = {
        read_elsewhere<Options>("kind"),
        {"url_env",
         [](Parser& parser, const Entry& url_env, Options& postgres) { postgres.url_env = parser.env_var_name(url_env); },
         true},
        {"table", [](Parser& parser, const Entry& table, Options& postgres) { postgres.table = parser.non_empty_string(table); },
         true},
        {"cursor",
         [](Parser& parser, const Entry& cursor, Options& postgres) {
           if (!cursor.value.IsSequence() || cursor.value.size() == 0) {
             parser.fail_value(cursor, "a list of the columns rows are read in order of, e.g. [updated_at, id]");
           }
           std::unordered_set<std::string> columns;
           for (std::size_t i = 0; i < cursor.value.size(); ++i) {
             const Entry column{cursor.key, cursor.value[i], cursor.path + "[" + std::to_string(i) + "]"};
             postgres.cursor.push_back(parser.non_empty_string(column));
             if (!columns.insert(postgres.cursor.back()).second) {
               parser.fail_at(column, "column " + postgres.cursor.back() + " is in the cursor twice");
             }
           }
         },
         true},
        {"columns",
         [](Parser& parser, const Entry& columns, Options& postgres) {
           if (!columns.value.IsMap()) {
             parser.fail_value(columns, "a map from field name to source column, e.g. {order_id: id}");
           }
           for (const auto& pair : columns.value) {
             if (!pair.first.IsScalar()) {
               parser.fail(pair.first.Mark(), columns.path + ": a field name is " + describe(pair.first));
             }
             const Entry rename{pair.first, pair.second, child_path(columns.path, pair.first.Scalar())};
             const std::string column = parser.non_empty_string(rename);
             for (const auto& [field, earlier] : postgres.columns) {
               if (field == pair.first.Scalar()) parser.fail_at(rename, "duplicate field " + field);
               if (earlier == column) parser.fail_at(rename, "column " + column + " is already mapped to field " + field);
             }
             postgres.columns.emplace_back(pair.first.Scalar(), column);
           }
         }},
        {"consistency",
         [](Parser& parser, const Entry& consistency, Options& postgres) {
           const auto text = parser.string_value(consistency);
           if (text == "snapshot") {
             postgres.consistency = Consistency::kSnapshot;
           } else if (text != "safety_lag") {
             parser.fail_value(consistency, "safety_lag (the default) or snapshot");
           }
         }},
        {"safety_lag",
         [](Parser& parser, const Entry& safety_lag, Options& postgres) {
           if (postgres.consistency == Consistency::kSnapshot) {
             parser.fail_at(safety_lag, "applies to consistency: safety_lag only (snapshot reads without a lag)");
           }
           postgres.safety_lag = parser.duration_value(safety_lag);
         }},
    };
    Options postgres;
    postgres.origin = message_at(mark_of(map), map.path);
    const auto read = read_fields(map, schema, postgres, Reading::kUntilAnError,
                                  "; secrets are never in the file: url_env names the environment variable that holds "
                                  "the source database's URL");
    // safety_lag compares the first cursor column with now(): a timestamp, which alone is
    // rarely unique; one column (an id) is read safely only by snapshot.
    if (postgres.consistency != Consistency::kSnapshot && postgres.cursor.size() == 1) {
      fail_at(*find(read.keys, "cursor"),
              "a cursor of one column needs consistency: snapshot; safety_lag needs a timestamp first and "
              "a unique column after it, e.g. cursor: [updated_at, id]");
    }
    return postgres;
  }

  // ---- kind: http (connectors/http_api, docs/sources.md "http") ----

  // A PEM file of trusted certificates (ca_file of an http destination or source), checked
  // here so that a typo fails at start-up, naming the line, not at the first request.
  std::string ca_file_value(const Entry& entry) const {
    std::string path = non_empty_string(entry);
    if (std::filesystem::is_directory(path)) {
      fail_at(entry, "'" + path + "' is a folder, not a PEM file of trusted certificates");
    }
    if (!std::ifstream(path)) fail_at(entry, "cannot read '" + path + "': " + std::strerror(errno));
    return path;
  }

  connectors::http_api::JsonPath json_path_value(const Entry& entry) const {
    const auto path = connectors::http_api::parse_json_path(string_value(entry));
    if (!path) fail_value(entry, "a dotted path of member names (e.g. data or meta.next_cursor)");
    return *path;
  }

  SourceOptions parse_http_source(const Entry& map) {
    using connectors::http_api::HttpSourceOptions;
    using connectors::http_api::PageFormat;
    using connectors::http_api::Paging;
    static const std::vector<Field<HttpSourceOptions>> schema = {
        read_elsewhere<HttpSourceOptions>("kind"),
        {"url",
         [](Parser& parser, const Entry& url, HttpSourceOptions& http) { http.url = parser.http_url(url); },
         true},
        // An ndjson page's records and next cursor are checked against its format after the reading.
        {"records",
         [](Parser& parser, const Entry& records, HttpSourceOptions& http) {
           http.records = parser.json_path_value(records);
         }},
        {"next",
         [](Parser& parser, const Entry& next, HttpSourceOptions& http) {
           const auto ways = parser.fields(next, {"json", "link_header"});
           const auto* json = find(ways, "json");
           const auto* link = find(ways, "link_header");
           if ((json == nullptr) == (link == nullptr)) {
             parser.fail_at(next, "expected exactly one of json (a dotted path to the next cursor, e.g. {json: "
                                  "next_cursor}) or link_header (a Link relation, e.g. {link_header: next})");
           }
           if (json != nullptr) {
             http.paging = Paging::kJsonField;
             http.next_json = parser.json_path_value(*json);
           } else {
             http.paging = Paging::kLinkHeader;
             http.next_relation = parser.non_empty_string(*link);
           }
         }},
        {"format",
         [](Parser& parser, const Entry& format, HttpSourceOptions& http) {
           const auto text = parser.string_value(format);
           if (text != "json" && text != "ndjson") parser.fail_value(format, "json or ndjson");
           http.format = text == "json" ? PageFormat::kJson : PageFormat::kNdjson;
         }},
        {"auth",
         [](Parser& parser, const Entry& auth, HttpSourceOptions& http) {
           const auto parts =
               parser.fields(auth, {"header", "value_env"}, "; the value comes from the environment variable value_env names");
           const auto& header = parser.require(parts, auth, "header");
           http.auth_header = parser.non_empty_string(header);
           if (!is_name(http.auth_header)) parser.fail_value(header, "a header name (letters, digits, '-' and '_')");
           http.auth_value_env = parser.env_var_name(parser.require(parts, auth, "value_env"));
         }},
        {"max_rps",
         [](Parser& parser, const Entry& max_rps, HttpSourceOptions& http) {
           const std::string text = max_rps.value.IsScalar() ? max_rps.value.Scalar() : "";
           double value = 0;
           const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
           if (text.empty() || error != std::errc{} || end != text.data() + text.size() || !(value > 0) ||
               value > 1e6) {
             parser.fail_value(max_rps, "a positive number of requests per second (e.g. 10 or 0.5)");
           }
           http.max_rps = value;
         }},
        {"ca_file",
         [](Parser& parser, const Entry& ca_file, HttpSourceOptions& http) {
           if (!http.url.starts_with("https://")) parser.fail_at(ca_file, "applies to https:// URLs only");
           http.ca_file = parser.ca_file_value(ca_file);
         }},
        duration_field("timeout", &HttpSourceOptions::request_timeout),
        integer_field("max_attempts", &HttpSourceOptions::max_attempts, 1, 100, "an integer from 1 to 100"),
    };
    HttpSourceOptions http;
    const auto read = read_fields(map, schema, http, Reading::kEachOnItsOwn,
                                  "; secrets are never in the file: use auth: {header: NAME, value_env: VARIABLE}");
    if (http.format == PageFormat::kNdjson) {
      if (const auto* records = find(read.keys, "records"); records != nullptr && read.read("records")) {
        attempt([&] { fail_at(*records, "an ndjson page is its records: leave records out"); });
        http.records = {};
      }
      if (const auto* next = find(read.keys, "next");
          next != nullptr && read.read("next") && http.paging == Paging::kJsonField) {
        attempt([&] {
          fail_at(child_entry(*next, "json"), "an ndjson page has no member to read a cursor from: use {link_header: next}");
        });
      }
    }
    return http;
  }
  // ---- end of kind: http ----

  // ---- kind: nats (connectors/nats, docs/sources.md "nats") ----
  SourceOptions parse_nats_source(const Entry& map) {
    using connectors::nats::NatsSourceOptions;
    static const std::vector<Field<NatsSourceOptions>> schema = {
        read_elsewhere<NatsSourceOptions>("kind"),
        {"servers",
         [](Parser& parser, const Entry& servers, NatsSourceOptions& nats) {
           if (!servers.value.IsSequence() || servers.value.size() == 0) {
             parser.fail_value(servers, "a list of server URLs, e.g. [nats://127.0.0.1:4222]");
           }
           for (std::size_t i = 0; i < servers.value.size(); ++i) {
             const Entry server{servers.key, servers.value[i], servers.path + "[" + std::to_string(i) + "]"};
             const std::string url = parser.string_value(server);
             if (!url.starts_with("nats://") || url.size() == 7) parser.fail_value(server, "a URL nats://HOST:PORT");
             nats.servers.push_back(url);
           }
         },
         true},
        {"stream",
         [](Parser& parser, const Entry& stream, NatsSourceOptions& nats) {
           nats.stream = parser.non_empty_string(stream);
           // The name is a subject token and part of each stream's name: nothing JetStream or a
           // subject would read as a separator or a wildcard. So the name rule, stricter than the
           // JetStream rule a destination's stream follows (connectors/nats_sink is_stream_name),
           // which names one existing stream and goes into no subject.
           if (!is_name(nats.stream)) {
             parser.fail_value(stream, "a stream name of letters, digits, '_' and '-' (e.g. ORDERS)");
           }
         },
         true},
        integer_field("partitions", &NatsSourceOptions::partitions, 1, 1024, "an integer from 1 to 1024"),
        // JetStream replicates a stream on at most 5 servers.
        integer_field("replicas", &NatsSourceOptions::replicas, 1, 5, "an integer from 1 to 5"),
        {"format",
         [](Parser& parser, const Entry& format, NatsSourceOptions&) {
           if (parser.string_value(format) != "jsonl") parser.fail_value(format, "jsonl (each message is one JSON object)");
         }},
        duration_field("duplicate_window", &NatsSourceOptions::duplicate_window),
        duration_field("max_age", &NatsSourceOptions::max_age),
        integer_field("max_bytes", &NatsSourceOptions::max_bytes, 1, std::uint64_t{1} << 62,
                      "a positive number of bytes"),
        duration_field("owner_timeout", &NatsSourceOptions::owner_timeout),
        duration_field("rebalance_interval", &NatsSourceOptions::rebalance_interval),
    };
    NatsSourceOptions nats;
    const auto read = read_fields(map, schema, nats);
    nats.origin = message_at(mark_of(map), map.path);
    // A live worker beats every rebalance_interval: at least twice per owner_timeout, or a
    // late beat would hand its partitions to another worker while it still works.
    if (const auto* interval = find(read.keys, "rebalance_interval")) {
      attempt([&] {
        if (2 * nats.rebalance_interval > nats.owner_timeout) {
          fail_value(*interval, "a duration of at most half the owner_timeout (" +
                                    format_duration(nats.owner_timeout) + ")");
        }
      });
    } else if (const auto* owner_timeout = find(read.keys, "owner_timeout")) {
      attempt([&] {
        if (2 * nats.rebalance_interval > nats.owner_timeout) {
          fail_value(*owner_timeout, "a duration of at least twice the rebalance_interval (" +
                                         format_duration(nats.rebalance_interval) + ")");
        }
      });
    }
    return nats;
  }
  // ---- end of kind: nats ----

  ScheduleConfig parse_schedule(const Entry& map) {
    static const std::vector<Field<ScheduleConfig>> schema = {
        {"every",
         [](Parser& parser, const Entry& every, ScheduleConfig& schedule) {
           schedule.every = WrittenDuration{parser.duration_value(every), every.value.Scalar()};
         }},
        {"cron",
         [](Parser& parser, const Entry& cron, ScheduleConfig& schedule) {
           const std::string text = parser.string_value(cron);
           // Parsed once, here: what passes is what `serve` runs on.
           std::string error;
           const auto expression = CronExpression::parse(text, error);
           if (!expression) {
             parser.fail_value(
                 cron, "five fields (minute hour day-of-month month day-of-week) of digits, '*', ',', '-' and '/'", error);
           }
           // As the scheduler refuses it: a day that no month has (30 2 *) never comes.
           if (!expression->next_after(std::chrono::system_clock::now())) {
             parser.fail_at(cron, "\"" + text + "\" never matches (no such day in the months it names)");
           }
           schedule.cron = WrittenCron{*expression, text};
         }},
    };
    ReadFields read{fields(map, keys_of(schema)), {}};
    if ((find(read.keys, "every") == nullptr) == (find(read.keys, "cron") == nullptr)) {
      fail_at(map, "expected exactly one of every (e.g. every: 5m) or cron (e.g. cron: \"*/5 * * * *\")");
    }
    ScheduleConfig schedule;
    read_declared(map, read, schema, schedule, Reading::kUntilAnError);
    return schedule;
  }

  // `entity` is the one the pipeline loads: a view reads the built-in one only.
  std::vector<DestinationConfig> parse_destinations(const Entry& list, std::string_view entity) {
    if (!list.value.IsSequence()) fail_value(list, "a list of destinations");
    std::vector<DestinationConfig> destinations;
    std::unordered_set<std::string> names;
    for (std::size_t i = 0; i < list.value.size(); ++i) {
      attempt([&] {
        const Entry item{list.key, list.value[i], list.path + "[" + std::to_string(i) + "]"};
        auto destination = parse_destination(item, entity);
        if (!names.insert(destination.name).second) {
          fail_at(item, "destination '" + destination.name + "' is listed twice in this pipeline");
        }
        destinations.push_back(std::move(destination));
      });
    }
    return destinations;
  }

  friend const std::vector<DestinationDescriptor>& destination_descriptors();

  DestinationConfig parse_destination(const Entry& map, std::string_view entity) {
    const auto& kinds = destination_descriptors();
    DestinationConfig destination;
    // name, kind, each kind's own keys (in the order of the kinds), max_in_flight.
    std::vector<std::string_view> allowed = {"name", "kind"};
    for (const auto& kind : kinds) allowed.insert(allowed.end(), kind.keys.begin(), kind.keys.end());
    allowed.push_back("max_in_flight");
    const auto keys = fields(map, allowed,
                             "; secrets are never in the file: use secret_env to name the environment variable "
                             "that holds it");
    const auto& name = require(keys, map, "name");
    destination.name = string_value(name);
    if (!is_valid_name(destination.name)) fail_value(name, "a name of " + std::string(kNameRule));
    destination.line = line_of(name);
    const auto& kind = require(keys, map, "kind");
    const auto text = string_value(kind);
    const auto found = std::find_if(kinds.begin(), kinds.end(), [&](const auto& listed) { return listed.name == text; });
    if (found == kinds.end()) fail_value(kind, kind_names(kinds));
    const DestinationDescriptor& descriptor = *found;
    const auto& capabilities = descriptor.capabilities;
    // Until declared views are built (docs/design/declared-views-wip.md), nothing may feed one,
    // and no other destination may take the name its destination will have.
    if (const auto view = view_lines_.find(destination.name); view != view_lines_.end()) {
      fail_at(name, capabilities.view
                        ? "view '" + destination.name + "' is declared at line " + std::to_string(view->second) +
                              ", but declared views are not built yet: no pipeline can feed one"
                        : "'" + destination.name + "' is the name of the view declared at line " +
                              std::to_string(view->second) + " (a view and a destination may not share a name)");
    }
    // The views (account_balance, daily_totals) fold transaction amounts by account; another
    // entity's events have neither.
    if (capabilities.view && entity != kBuiltInEntityName) {
      fail_at(kind, "a " + text + " destination reads the built-in transaction entity; this pipeline loads entity '" +
                        std::string(entity) + "' (use an http destination)");
    }
    // Unique across the file, not per pipeline: outbox rows name only their destination. A
    // shared kind (a view) is the exception: several pipelines may list it, and it reflects all of them.
    if (const auto [it, inserted] =
            destination_lines_.emplace(destination.name, Definition{destination.line, capabilities.shared});
        !inserted && (!capabilities.shared || !it->second.shared)) {
      fail_at(name, "destination '" + destination.name + "' is already defined at line " +
                        std::to_string(it->second.line) +
                        " (destination names must be unique across the file; only a view destination may be "
                        "listed by several pipelines)");
    }
    // Each kind takes only its own keys; a kind without keys or window takes only its name and kind.
    const std::string only_name_and_kind = "a " + text + " destination takes only name and kind";
    for (const auto& owner : kinds) {
      if (&owner == &descriptor) continue;
      for (const auto key : owner.keys) {
        if (const auto* extra = find(keys, key)) {
          fail_at(*extra, descriptor.keys.empty() ? only_name_and_kind
                                                  : "applies to " + std::string(owner.name) + " destinations only");
        }
      }
    }
    if (const auto* max_in_flight = find(keys, "max_in_flight")) {
      if (!capabilities.windowed) fail_at(*max_in_flight, only_name_and_kind);
      attempt([&] {
        destination.max_in_flight = integer_value(*max_in_flight, 1, 1024, "an integer from 1 to 1024");
        if (relay_max_in_flight_ && *destination.max_in_flight > *relay_max_in_flight_) {
          fail_at(*max_in_flight, "is above relay.max_in_flight (" + std::to_string(*relay_max_in_flight_) +
                                      "), the window of the whole relay; raise that too");
        }
      });
    }
    destination.options = descriptor.read(*this, map, keys);
    return destination;
  }


  RelayConfig parse_relay(const Entry& map) {
    static const std::vector<Field<RelayConfig>> schema = {
        integer_field("max_attempts", &RelayConfig::max_attempts, 1, 1000, "an integer from 1 to 1000"),
        duration_field("base_delay", &RelayConfig::base_delay),
        duration_field("max_delay", &RelayConfig::max_delay),
        integer_field("max_in_flight", &RelayConfig::max_in_flight, 1, 1024, "an integer from 1 to 1024"),
        duration_field("connect_timeout", &RelayConfig::connect_timeout),
        duration_field("request_timeout", &RelayConfig::request_timeout),
    };
    RelayConfig relay;
    const auto read = read_fields(map, schema, relay);
    // The two delays are compared only when both were read (or defaulted).
    if (read.read("base_delay") && read.read("max_delay") && relay.max_delay < relay.base_delay) {
      if (const auto* max_delay = find(read.keys, "max_delay")) {
        fail_at(*max_delay, "must not be shorter than relay.base_delay");
      }
      fail_at(require(read.keys, map, "base_delay"), "must not be longer than relay.max_delay (5m by default)");
    }
    return relay;
  }

  std::string file_name_;
  struct Definition {
    int line = 0;  // of the destination's first definition
    bool shared = false;
  };
  std::map<std::string, Definition> destination_lines_;
  std::optional<std::size_t> relay_max_in_flight_;  // the file's (or the default) once read without errors
  std::set<std::string> failed_entities_;  // declared with an error: named by a pipeline without a second one
  std::map<std::string, int> view_lines_;  // every view the file declares, with or without errors: its name's line
  NodeSet interpolated_;    // the nodes whose values interpolate_values has replaced
  NodeSet uninterpolated_;  // those whose interpolation failed
  std::vector<std::pair<int, std::string>> errors_;  // (0-based line, message)
};

}  // namespace

std::vector<std::string> PipelineConfig::destination_names() const {
  std::vector<std::string> names;
  for (const auto& destination : destinations) names.push_back(destination.name);
  return names;
}

namespace {

// A nats source's partitions are its streams <stream>_<k> (docs/scale-out.md).
Partitioning nats_partitioning() {
  using connectors::nats::NatsSourceOptions;
  const auto nats = [](const SourceOptions& options) -> const NatsSourceOptions& {
    return std::get<NatsSourceOptions>(options);
  };
  return {.count = [nats](const SourceOptions& options) { return nats(options).partitions; },
          .partition = [nats](const SourceOptions& options, int partition) -> SourceOptions {
            auto one = nats(options);
            one.partition = partition;
            return one;
          },
          .name = [nats](const SourceOptions& options,
                         int partition) { return connectors::nats::partition_stream(nats(options), partition); },
          .owner_timeout = [nats](const SourceOptions& options) { return Duration(nats(options).owner_timeout); },
          .rebalance_interval = [nats](const SourceOptions& options) {
            return Duration(nats(options).rebalance_interval);
          }};
}

const std::vector<SourceDescriptor>& source_descriptors() {
  static const std::vector<SourceDescriptor> descriptors = {
      {"file", {.takes_file_override = true, .counts_reread_files = true}, &Parser::parse_file_source},
      {"postgres", {}, &Parser::parse_postgres_source},
      {"http", {}, &Parser::parse_http_source},
      {"nats", {.partitioned = true}, &Parser::parse_nats_source, nats_partitioning()},
  };
  return descriptors;
}

// kind: http (connectors/http/options.hpp) and kind: nats (connectors/nats_sink/options.hpp).
// Whether a nats destination's stream exists, and its duplicate window, only the servers can
// tell: checked when the relay starts.
const std::vector<DestinationDescriptor>& destination_descriptors() {
  using connectors::http::HttpDestinationOptions;
  using connectors::nats_sink::NatsDestinationOptions;
  static const std::vector<DestinationDescriptor> descriptors = {
      Parser::destination_kind<HttpDestinationOptions>(
          "http", {.windowed = true},
          {{"url",
            [](Parser& parser, const Entry& url, HttpDestinationOptions& http) { http.url = parser.http_url(url); },
            true},
           {"secret_env",
            [](Parser& parser, const Entry& secret_env, HttpDestinationOptions& http) {
              http.secret_env = parser.env_var_name(secret_env);
            },
            true},
           {"ca_file", [](Parser& parser, const Entry& ca_file, HttpDestinationOptions& http) {
              if (!http.url.starts_with("https://")) parser.fail_at(ca_file, "applies to https:// URLs only");
              http.ca_file = parser.ca_file_value(ca_file);
            }}}),
      Parser::destination_kind<ViewDestinationOptions>("view", {.view = true, .shared = true}, {}),
      Parser::destination_kind<NatsDestinationOptions>(
          "nats", {.windowed = true},
          {{"servers",
            [](Parser& parser, const Entry& servers, NatsDestinationOptions& nats) {
              if (!servers.value.IsSequence() || servers.value.size() == 0) {
                parser.fail_value(servers, "a list of server URLs, e.g. [nats://127.0.0.1:4222]");
              }
              for (std::size_t i = 0; i < servers.value.size(); ++i) {
                const Entry server{servers.key, servers.value[i], servers.path + "[" + std::to_string(i) + "]"};
                nats.servers.push_back(parser.string_value(server));
                // tls:// would need a trust store the sink does not load yet (docs/delivery.md).
                if (!nats.servers.back().starts_with("nats://")) parser.fail_value(server, "a URL starting with nats://");
              }
            },
            true},
           {"subject",
            [](Parser& parser, const Entry& subject, NatsDestinationOptions& nats) {
              nats.subject = parser.string_value(subject);
              if (!connectors::nats_sink::is_publish_subject(nats.subject)) {
                parser.fail_value(subject, "a NATS subject: dot-separated tokens without spaces or the wildcards * and >");
              }
            },
            true},
           {"stream",
            [](Parser& parser, const Entry& stream, NatsDestinationOptions& nats) {
              nats.stream = parser.string_value(stream);
              if (!connectors::nats_sink::is_stream_name(nats.stream)) {
                parser.fail_value(stream,
                                  "a JetStream stream name: printable ASCII without spaces, '.', '*', '>', '/' or '\\'");
              }
            },
            true},
           {"creds_env", [](Parser& parser, const Entry& creds_env, NatsDestinationOptions& nats) {
              nats.creds_env = parser.env_var_name(creds_env);
            }}}),
  };
  return descriptors;
}

const DestinationDescriptor& descriptor_of(const DestinationConfig& destination) {
  return destination_descriptors().at(destination.options.index());
}

const SourceDescriptor& descriptor_of(const SourceConfig& source) { return source_descriptors().at(source.options.index()); }

}  // namespace

std::string_view SourceConfig::kind() const { return descriptor_of(*this).name; }

const SourceCapabilities& SourceConfig::capabilities() const { return descriptor_of(*this).capabilities; }

namespace {

const Partitioning& partitioning_of(const SourceConfig& source) {
  if (!source.capabilities().partitioned) {
    throw std::logic_error("a kind " + std::string(source.kind()) + " source is not partitioned");
  }
  return descriptor_of(source).partitioning;
}

}  // namespace

int SourceConfig::partition_count() const {
  return capabilities().partitioned ? partitioning_of(*this).count(options) : 1;
}

SourceConfig SourceConfig::partition(int partition) const { return {partitioning_of(*this).partition(options, partition)}; }

std::string SourceConfig::partition_name(int partition) const {
  return partitioning_of(*this).name(options, partition);
}

Duration SourceConfig::owner_timeout() const { return partitioning_of(*this).owner_timeout(options); }

Duration SourceConfig::rebalance_interval() const { return partitioning_of(*this).rebalance_interval(options); }

std::vector<std::pair<std::string, SourceConfig::ShownValue>> SourceConfig::shown() const {
  struct Shown {
    std::vector<std::pair<std::string, ShownValue>> operator()(const connectors::file::FileSourceOptions& file) const {
      return {{"path", file.path}, {"format", std::string(to_string(file.format))}};
    }
    std::vector<std::pair<std::string, ShownValue>> operator()(const connectors::postgres::Options& postgres) const {
      return {{"table", postgres.table}, {"cursor", postgres.cursor}};
    }
    std::vector<std::pair<std::string, ShownValue>> operator()(
        const connectors::http_api::HttpSourceOptions& http) const {
      return {{"url", http.url}};  // the API redacts its credentials
    }
    std::vector<std::pair<std::string, ShownValue>> operator()(const connectors::nats::NatsSourceOptions& nats) const {
      return {{"stream", nats.stream}, {"partitions", std::int64_t{nats.partitions}}};
    }
  };
  return std::visit(Shown{}, options);
}

std::string_view DestinationConfig::kind() const { return descriptor_of(*this).name; }

const DestinationCapabilities& DestinationConfig::capabilities() const { return descriptor_of(*this).capabilities; }

std::string_view to_string(Trigger trigger) { return name_of(trigger, kTriggers); }

std::vector<std::string> Config::destination_names_with(bool DestinationCapabilities::*capability) const {
  std::vector<std::string> names;
  for (const auto& [name, destination] : destinations()) {
    if (destination.capabilities().*capability) names.push_back(name);
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

const EntityDeclaration* Config::find_entity(std::string_view name) const {
  if (name == kBuiltInEntityName) return &built_in_transaction_entity();
  const auto found = entities.find(std::string(name));
  return found == entities.end() ? nullptr : &found->second;
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

ConfigError::ConfigError(std::vector<std::string> errors)
    : tidemark::Error(tidemark::ErrorKind::kConfig, [&] {
        std::string joined;
        for (const auto& error : errors) joined += (joined.empty() ? "" : "\n") + error;
        return joined;
      }()),
      errors_(std::move(errors)) {}

bool is_valid_name(std::string_view text) { return is_name(text, kMaxNameLength); }

ConfigCheck check_config(std::string_view yaml_text, std::string_view file_name) {
  Parser parser(file_name);
  ConfigCheck check;
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(std::string(yaml_text));
  } catch (const YAML::Exception& error) {
    // Nothing can be read past a syntax error.
    try {
      parser.fail(error.mark, "YAML syntax error: " + error.msg);
    } catch (const ConfigError& syntax) {
      check.errors.push_back(syntax.what());
    }
    return check;
  }
  check.config = parser.parse(documents.empty() ? YAML::Node() : documents.front());
  check.errors = parser.errors();
  // A second document would otherwise be ignored without a word.
  if (documents.size() > 1) {
    try {
      parser.fail(documents[1].Mark(), "a config file holds one YAML document; remove the '---'");
    } catch (const ConfigError& second) {
      check.errors.push_back(second.what());
    }
  }
  return check;
}

Config parse_config(std::string_view yaml_text, std::string_view file_name) {
  auto check = check_config(yaml_text, file_name);
  if (!check.errors.empty()) throw ConfigError(std::move(check.errors));
  return std::move(check.config);
}

namespace {

std::string read_config_file(const std::filesystem::path& path) {
  // An ifstream opens a folder and then reads nothing, which would look like a YAML error.
  if (std::error_code ignored; std::filesystem::is_directory(path, ignored)) {
    throw ConfigError("config file " + path.string() + " is a directory, not a YAML file: name the file in it (e.g. " +
                      (path / "tidemark.yaml").string() + ")");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError("cannot read config file " + path.string() + ": " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError("cannot read config file " + path.string() + ": " + std::strerror(errno));
  return text.str();
}

}  // namespace

Config load_config(const std::filesystem::path& path) { return parse_config(read_config_file(path), path.string()); }

ConfigCheck check_config_file(const std::filesystem::path& path) {
  return check_config(read_config_file(path), path.string());
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

}  // namespace tidemark::app::config
