// tidemark nats setup|mapping --pipeline NAME --config FILE: the JetStream side of a nats
// pipeline (docs/scale-out.md). setup creates each partition's stream and each nats
// destination's, or checks an existing one and reports how it differs (it never modifies a
// stream); mapping prints the server's
// subject mapping that spreads keys over the partitions.
#include <iostream>
#include <memory>

#include "app/cli/commands.hpp"
#include "connectors/nats/connection.hpp"
#include "connectors/nats/streams.hpp"
#include "app/wiring/sinks.hpp"

namespace tidemark::app {

namespace {

struct NatsOptions {
  std::string config_file;
  std::string pipeline;
};

// The named pipeline; UsageError when the configuration has none.
app::config::PipelineConfig find_pipeline(const app::config::Config& config, const NatsOptions& options) {
  const auto found = config.pipelines.find(options.pipeline);
  if (found == config.pipelines.end()) {
    std::string known;
    for (const auto& [name, ignored] : config.pipelines) known += (known.empty() ? "" : ", ") + name;
    throw UsageError("--pipeline " + options.pipeline + ": no such pipeline in " + options.config_file +
                     " (it defines: " + (known.empty() ? "none" : known) + ")");
  }
  return found->second;
}

// The nats source of the named pipeline; UsageError when there is none.
connectors::nats::NatsSourceOptions nats_source(const NatsOptions& options) {
  const app::config::SourceConfig source = find_pipeline(app::config::load_config(options.config_file), options).source;
  const auto* nats = source.get_if<connectors::nats::NatsSourceOptions>();
  if (nats == nullptr) {
    throw UsageError("pipeline " + options.pipeline + " reads a kind " + std::string(source.kind()) +
                     " source, not nats: tidemark nats mapping applies to nats sources only");
  }
  return *nats;
}

// Prints an existing stream's differences; returns whether there were any.
bool report(const std::string& stream, const std::vector<std::string>& differences) {
  if (differences.empty()) {
    std::cout << "stream " << stream << ": exists as configured" << std::endl;
    return false;
  }
  std::cout << "stream " << stream << ": exists and differs from the configuration (left as it is):" << std::endl;
  for (const auto& difference : differences) std::cout << "  " << difference << std::endl;
  return true;
}

// The partitions' streams of a nats source; returns how many differ.
int setup_source(const connectors::nats::NatsSourceOptions& source) {
  connectors::nats::Connection connection(source.servers);
  int differing = 0;
  for (int partition = 0; partition < source.partitions; ++partition) {
    const connectors::nats::StreamSpec spec = connectors::nats::partition_spec(source, partition);
    const auto existing = connection.stream_info(spec.name);
    if (!existing) {
      connection.add_stream(spec);
      std::cout << "stream " << spec.name << ": created (subjects " << spec.subjects << ", replicas " << spec.replicas
                << ")" << std::endl;
    } else if (report(spec.name, connectors::nats::differences(spec, *existing))) {
      ++differing;
    }
  }
  return differing;
}

// The stream of a nats destination (docs/delivery.md "NATS JetStream destinations"): its
// duplicate window twice the relay's redelivery horizon; returns whether it differs.
bool setup_destination(const app::config::DestinationConfig& destination, const app::config::RelayConfig& relay) {
  const auto options = nats_options(destination, relay);
  const auto setup = connectors::nats_sink::setup_stream(options.connection, options.stream, options.subject,
                                                         options.redelivery_horizon);
  if (setup.created) {
    std::cout << "stream " << options.stream << ": created for destination " << destination.name << " (subjects "
              << options.subject << ".>, duplicate window "
              << pipeline::format_duration(std::chrono::duration_cast<pipeline::Duration>(setup.duplicate_window))
              << ")" << std::endl;
    return false;
  }
  return report(options.stream, setup.differences);
}

// Creates the missing streams of the pipeline's nats source and nats destinations and
// compares the existing ones; exit 2 when one differs.
int setup(const NatsOptions& options) {
  const app::config::Config config = app::config::load_config(options.config_file);
  const app::config::PipelineConfig pipeline = find_pipeline(config, options);
  const auto destinations = config.destinations();
  std::vector<app::config::DestinationConfig> sinks;
  for (const auto& name : pipeline.destination_names()) {
    const auto found = destinations.find(name);
    if (found != destinations.end() && found->second.get_if<connectors::nats_sink::NatsDestinationOptions>()) {
      sinks.push_back(found->second);
    }
  }
  const auto* nats = pipeline.source.get_if<connectors::nats::NatsSourceOptions>();
  if (nats == nullptr && sinks.empty()) {
    throw UsageError("pipeline " + options.pipeline + " has neither a nats source nor a nats destination: "
                     "tidemark nats setup has nothing to create");
  }
  int differing = nats != nullptr ? setup_source(*nats) : 0;
  for (const auto& sink : sinks) differing += setup_destination(sink, config.relay) ? 1 : 0;
  if (differing > 0) {
    std::cerr << "tidemark nats setup: " << differing << " stream(s) differ from " << options.config_file
              << "; setup never modifies a stream: change the configuration, or move the data to a new stream "
                 "(docs/scale-out.md)" << std::endl;
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace

void register_nats_commands(CLI::App& root, int& exit_code) {
  auto* nats = root.add_subcommand("nats", "The NATS JetStream streams of a nats pipeline (docs/scale-out.md)");
  nats->require_subcommand(1);
  const auto add_options = [](CLI::App& command, NatsOptions& options) {
    command.add_option("--config", options.config_file, "The configuration file that defines the pipeline")
        ->required()
        ->check(CLI::ExistingFile);
    command.add_option("--pipeline", options.pipeline, "A pipeline with a nats source (setup: or a nats destination)")->required();
  };

  auto setup_options = std::make_shared<NatsOptions>();
  auto* setup_command = nats->add_subcommand(
      "setup",
      "Create each partition's stream <stream>_<k> of a nats source (subjects <stream>.<k>.>, file storage,\n"
      "limits retention, R=replicas, DenyDelete and DenyPurge, the duplicate window, max_age/max_bytes when\n"
      "configured), and the stream of each nats destination the pipeline lists (subjects <subject>.>, a\n"
      "duplicate window of twice the relay's redelivery horizon).\n"
      "An existing stream is never modified: its differences are printed and the exit status is 2.");
  add_options(*setup_command, *setup_options);
  setup_command->callback([&exit_code, setup_options] { exit_code = setup(*setup_options); });

  auto mapping_options = std::make_shared<NatsOptions>();
  auto* mapping_command = nats->add_subcommand(
      "mapping",
      "Print the server configuration's mappings block that sends <stream>.in.<key> to the partition\n"
      "<stream>.<k>.<key> chosen from a hash of the key, so that producers need not know the partitions.");
  add_options(*mapping_command, *mapping_options);
  mapping_command->callback([&exit_code, mapping_options] {
    std::cout << connectors::nats::mapping_block(nats_source(*mapping_options));
    exit_code = kExitOk;
  });
}

}  // namespace tidemark::app
