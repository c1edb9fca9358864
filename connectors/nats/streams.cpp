#include "connectors/nats/streams.hpp"

namespace tidemark::connectors::nats {

namespace {

constexpr std::int64_t kNanosPerMilli = 1'000'000;

std::string yes_no(bool value) { return value ? "true" : "false"; }

// A duration in nanoseconds as a person reads it: whole seconds when it is some.
std::string duration_text(std::int64_t nanoseconds) {
  if (nanoseconds == 0) return "0 (unlimited)";
  if (nanoseconds % (1000 * kNanosPerMilli) == 0) return std::to_string(nanoseconds / (1000 * kNanosPerMilli)) + "s";
  return std::to_string(nanoseconds / kNanosPerMilli) + "ms";
}

std::string bytes_text(std::int64_t bytes) { return bytes < 0 ? "-1 (unlimited)" : std::to_string(bytes); }

}  // namespace

std::string partition_stream(const NatsSourceOptions& options, int partition) {
  return options.stream + "_" + std::to_string(partition);
}

std::string partition_subjects(const NatsSourceOptions& options, int partition) {
  return options.stream + "." + std::to_string(partition) + ".>";
}

StreamSpec partition_spec(const NatsSourceOptions& options, int partition) {
  StreamSpec spec;
  spec.name = partition_stream(options, partition);
  spec.subjects = partition_subjects(options, partition);
  spec.replicas = options.replicas;
  spec.duplicate_window_ns = options.duplicate_window.count() * kNanosPerMilli;
  if (options.max_age) spec.max_age_ns = options.max_age->count() * kNanosPerMilli;
  if (options.max_bytes) spec.max_bytes = *options.max_bytes;
  return spec;
}

std::vector<std::string> differences(const StreamSpec& spec, const StreamInfo& existing) {
  std::vector<std::string> found;
  const auto differ = [&](const std::string& setting, const std::string& has, const std::string& configured,
                          const char* note = "") {
    if (has != configured) found.push_back(setting + ": " + has + ", configured " + configured + note);
  };
  std::string subjects;
  for (const auto& subject : existing.subjects) subjects += (subjects.empty() ? "" : " ") + subject;
  differ("subjects", subjects, spec.subjects);
  differ("storage", existing.file_storage ? "file" : "memory", "file");
  differ("retention", existing.limits_retention ? "limits" : "not limits", "limits");
  differ("replicas", std::to_string(existing.replicas), std::to_string(spec.replicas));
  // JetStream can set these but never unset them: a stream made with them stays so.
  differ("deny_delete", yes_no(existing.deny_delete), yes_no(spec.deny_delete), " (can be set, never unset)");
  differ("deny_purge", yes_no(existing.deny_purge), yes_no(spec.deny_purge), " (can be set, never unset)");
  differ("duplicate_window", duration_text(existing.duplicate_window_ns), duration_text(spec.duplicate_window_ns));
  differ("max_age", duration_text(existing.max_age_ns), duration_text(spec.max_age_ns));
  differ("max_bytes", bytes_text(existing.max_bytes), bytes_text(spec.max_bytes));
  return found;
}

std::string mapping_block(const NatsSourceOptions& options) {
  return "mappings {\n  \"" + options.stream + ".in.*\": \"" + options.stream + ".{{partition(" +
         std::to_string(options.partitions) + ",1)}}.{{wildcard(1)}}\"\n}\n";
}

}  // namespace tidemark::connectors::nats
