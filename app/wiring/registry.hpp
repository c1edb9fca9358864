#pragma once
// Kind -> factory: the one table that says which code builds each source and sink kind the
// config names, and what `check` asks of the environment each will read. A new source or sink
// kind is a connector folder, its descriptor line in app/config/config.cpp (with its options an
// alternative of SourceOptions or DestinationOptions) and one line here (docs/architecture.md "Where to add things").
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "app/config/config.hpp"
#include "pipeline/core/record_decoder.hpp"
#include "pipeline/core/source.hpp"
#include "pipeline/relay/relay.hpp"

namespace tidemark::metrics {
struct Metrics;
}  // namespace tidemark::metrics

namespace tidemark::app {

// Opens the source a pipeline reads (once the run holds the pipeline lock), decoding the fields
// of the entity it loads.
using SourceFactory = std::function<std::unique_ptr<pipeline::Source>(const app::config::SourceConfig&,
                                                                      const pipeline::EntityDeclaration&)>;

// What a sink factory may need: the whole config (its destinations of the kind, the relay
// settings) and the database the in-process sinks write to.
struct SinkContext {
  const app::config::Config& config;
  const std::string& database_url;
  metrics::Metrics* metrics = nullptr;  // where sinks count what only they see; nullptr: not exported
};
// Every sink of one destination kind, by destination name.
using SinkFactory = std::function<pipeline::Sinks(const SinkContext&)>;

// What `tidemark check` finds wrong in the environment a source or a destination reads when
// it opens (a variable that is not set): the messages, none when all is well.
using SourceCheck = std::function<std::vector<std::string>(const app::config::SourceConfig&)>;
using DestinationCheck =
    std::function<std::vector<std::string>(const app::config::DestinationConfig&, const app::config::Config&)>;

// The factory of `source`'s kind; every kind the config admits has one.
const SourceFactory& source_factory(const app::config::SourceConfig& source);
const SourceCheck& source_check(const app::config::SourceConfig& source);
// What watches the partitions of a partitioned source for news (connecting to it): serve's
// stream consumers ask it before each run. std::invalid_argument for a source that is not
// partitioned (a caller's mistake: it asks capabilities().partitioned first).
std::unique_ptr<pipeline::PartitionWatcher> watch_partitions(const app::config::SourceConfig& source);
// The decoder a quarantine release decodes stored records with: the decoder of the source kind
// that declares the record's stored format, so that it decodes exactly as the run did.
const pipeline::RecordDecoder& quarantine_decoder();
// What `check` asks of `destination`'s environment: its kind's check.
const DestinationCheck& destination_check(const app::config::DestinationConfig& destination);

// Every destination kind's sink factory, in the order of DestinationOptions' alternatives
// (every alternative has one).
std::vector<SinkFactory> sink_factories();

}  // namespace tidemark::app
