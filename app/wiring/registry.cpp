#include "app/wiring/registry.hpp"

#include <stdexcept>

#include "app/wiring/sinks.hpp"
#include "connectors/file/file_source.hpp"
#include "connectors/postgres/postgres_source.hpp"
#include "connectors/http_api/http_source.hpp"
#include "connectors/nats/nats_source.hpp"
#include "pipeline/core/validate.hpp"
#include "app/wiring/options.hpp"
#include "app/wiring/run_request.hpp"

namespace tidemark::app {

namespace {

const std::vector<std::pair<pipeline::SourceKind, SourceFactory>>& source_factories() {
  static const std::vector<std::pair<pipeline::SourceKind, SourceFactory>> factories = {
      {pipeline::SourceKind::kFile,
       [](const pipeline::SourceConfig& source, const pipeline::EntityDeclaration& entity) {
         return connectors::file::open_file_source(
             source.path, source.format, source.settle,
             std::make_shared<const pipeline::RecordLayout>(pipeline::record_layout(entity)), source.on_change);
       }},
      // Rows decode through the quarantine's decoder: a release decodes a row's raw JSON
      // object exactly as the run did.
      {pipeline::SourceKind::kPostgres,
       [](const pipeline::SourceConfig& source, const pipeline::EntityDeclaration& entity) {
         return connectors::postgres::open_postgres_source(source.postgres, entity, quarantine_decoder());
       }},
      {pipeline::SourceKind::kHttp,
       [](const pipeline::SourceConfig& source, const pipeline::EntityDeclaration& entity) {
         return connectors::http_api::open_http_source(
             source.http, std::make_shared<const pipeline::RecordLayout>(pipeline::record_layout(entity)));
       }},
      // One partition: source.nats.partition, set per partition by partition_requests.
      {pipeline::SourceKind::kNats,
       [](const pipeline::SourceConfig& source, const pipeline::EntityDeclaration& entity) {
         return connectors::nats::open_nats_partition(
             source.nats, std::make_shared<const pipeline::RecordLayout>(pipeline::record_layout(entity)));
       }},
  };
  return factories;
}

const std::vector<std::pair<pipeline::DestinationKind, SinkFactory>>& sink_factories() {
  static const std::vector<std::pair<pipeline::DestinationKind, SinkFactory>> factories = {
      {pipeline::DestinationKind::kHttp, [](const SinkContext& context) { return make_webhook_sinks(context.config); }},
      {pipeline::DestinationKind::kView,
       [](const SinkContext& context) { return make_view_sinks(context.config, context.database_url); }},
      {pipeline::DestinationKind::kNats,
       [](const SinkContext& context) { return make_nats_sinks(context.config, context.metrics); }},
  };
  return factories;
}

template <typename Kind, typename Factory>
const Factory& find_factory(const std::vector<std::pair<Kind, Factory>>& factories, Kind kind, const char* what) {
  for (const auto& [listed, factory] : factories) {
    if (listed == kind) return factory;
  }
  throw std::invalid_argument(std::string("no factory is registered for ") + what + " kind '" +
                              std::string(to_string(kind)) + "' (" + std::to_string(static_cast<int>(kind)) + ")");
}

}  // namespace

const SourceFactory& source_factory(pipeline::SourceKind kind) {
  return find_factory(source_factories(), kind, "source");
}

const SinkFactory& sink_factory(pipeline::DestinationKind kind) {
  return find_factory(sink_factories(), kind, "destination");
}

std::vector<pipeline::DestinationKind> sink_kinds() {
  std::vector<pipeline::DestinationKind> kinds;
  for (const auto& [kind, factory] : sink_factories()) kinds.push_back(kind);
  return kinds;
}

}  // namespace tidemark::app
