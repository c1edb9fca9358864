// tidemark nats setup|mapping --pipeline NAME --config FILE: the JetStream side of a nats
// pipeline (docs/scale-out.md). setup creates each partition's stream, or checks an existing
// one and reports how it differs (it never modifies a stream); mapping prints the server's
// subject mapping that spreads keys over the partitions.
#include <iostream>
#include <memory>

#include "app/cli/commands.hpp"
#include "connectors/nats/connection.hpp"
#include "connectors/nats/streams.hpp"

namespace tidemark::app {

namespace {

struct NatsOptions {
  std::string config_file;
  std::string pipeline;
};

// The nats source of the named pipeline; UsageError when there is none.
connectors::nats::NatsSourceOptions nats_source(const NatsOptions& options) {
  const pipeline::Config config = pipeline::load_config(options.config_file);
  const auto found = config.pipelines.find(options.pipeline);
  if (found == config.pipelines.end()) {
    std::string known;
    for (const auto& [name, ignored] : config.pipelines) known += (known.empty() ? "" : ", ") + name;
    throw UsageError("--pipeline " + options.pipeline + ": no such pipeline in " + options.config_file +
                     " (it defines: " + (known.empty() ? "none" : known) + ")");
  }
  const pipeline::SourceConfig& source = found->second.source;
  if (source.kind != pipeline::SourceKind::kNats) {
    throw UsageError("pipeline " + options.pipeline + " reads a kind " + std::string(pipeline::to_string(source.kind)) +
                     " source, not nats: tidemark nats applies to nats sources only");
  }
  return source.nats;
}

// Creates the missing streams and compares the existing ones; exit 2 when one differs.
int setup(const NatsOptions& options) {
  const connectors::nats::NatsSourceOptions source = nats_source(options);
  connectors::nats::Connection connection(source.servers);
  int differing = 0;
  for (int partition = 0; partition < source.partitions; ++partition) {
    const connectors::nats::StreamSpec spec = connectors::nats::partition_spec(source, partition);
    const auto existing = connection.stream_info(spec.name);
    if (!existing) {
      connection.add_stream(spec);
      std::cout << "stream " << spec.name << ": created (subjects " << spec.subjects << ", replicas " << spec.replicas
                << ")" << std::endl;
      continue;
    }
    const std::vector<std::string> found = connectors::nats::differences(spec, *existing);
    if (found.empty()) {
      std::cout << "stream " << spec.name << ": exists as configured" << std::endl;
      continue;
    }
    ++differing;
    std::cout << "stream " << spec.name << ": exists and differs from the configuration (left as it is):" << std::endl;
    for (const auto& difference : found) std::cout << "  " << difference << std::endl;
  }
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
    command.add_option("--pipeline", options.pipeline, "A pipeline whose source is of kind nats")->required();
  };

  auto setup_options = std::make_shared<NatsOptions>();
  auto* setup_command = nats->add_subcommand(
      "setup",
      "Create each partition's stream <stream>_<k> (subjects <stream>.<k>.>, file storage, limits retention,\n"
      "R=replicas, DenyDelete and DenyPurge, the duplicate window, max_age/max_bytes when configured).\n"
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
