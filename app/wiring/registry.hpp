#pragma once
// Kind -> factory: the one table that says which code builds each source and sink kind the
// config names. A new kind is a connector folder, an enumerator in app/config and one line here.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "app/config/config.hpp"
#include "pipeline/core/source.hpp"
#include "pipeline/relay/relay.hpp"

namespace tidemark::metrics {
struct Metrics;
}  // namespace tidemark::metrics

namespace tidemark::app {

// Opens the source a pipeline reads (once the run holds the pipeline lock), decoding the fields
// of the entity it loads.
using SourceFactory = std::function<std::unique_ptr<pipeline::Source>(const pipeline::SourceConfig&,
                                                                      const pipeline::EntityDeclaration&)>;

// What a sink factory may need: the whole config (its destinations of the kind, the relay
// settings) and the database the in-process sinks write to.
struct SinkContext {
  const pipeline::Config& config;
  const std::string& database_url;
  metrics::Metrics* metrics = nullptr;  // where sinks count what only they see; nullptr: not exported
};
// Every sink of one destination kind, by destination name.
using SinkFactory = std::function<pipeline::Sinks(const SinkContext&)>;

// The factory of `kind`. The config parser admits only kinds that have one, so a kind without
// one is a programming error: std::invalid_argument naming the kind.
const SourceFactory& source_factory(pipeline::SourceKind kind);
const SinkFactory& sink_factory(pipeline::DestinationKind kind);

// Every destination kind with a sink factory, in registration order.
std::vector<pipeline::DestinationKind> sink_kinds();

}  // namespace tidemark::app
