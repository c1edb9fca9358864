#include "app/wiring/registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <variant>

#include "app/wiring/sinks.hpp"
#include "connectors/file/file_record_decoder.hpp"
#include "connectors/file/file_source.hpp"
#include "connectors/postgres/postgres_source.hpp"
#include "connectors/http_api/http_source.hpp"
#include "connectors/http_api/record_decoder.hpp"
#include "connectors/nats/nats_source.hpp"
#include "pipeline/core/validate.hpp"
#include "pipeline/views/registry.hpp"
#include "app/wiring/options.hpp"
#include "app/wiring/run_request.hpp"

namespace tidemark::app {

namespace {

// How a source kind opens, what `check` asks of it and how a release decodes what it
// quarantined, in the order of SourceOptions' alternatives (app::config::SourceConfig): one
// line per kind.
struct SourceWiring {
  SourceFactory open;
  SourceCheck check = [](const app::config::SourceConfig&) { return std::vector<std::string>{}; };
  // The stored formats (pipeline::Source::format) that `decoder` decodes. A kind that stores a
  // format another kind declares names none: the two decode it alike.
  std::vector<std::string_view> formats = {};
  const pipeline::RecordDecoder* decoder = nullptr;
  // A partitioned kind's: what watches its partitions for news.
  std::function<std::unique_ptr<pipeline::PartitionWatcher>(const app::config::SourceConfig&)> watch = nullptr;
};

// A factory that hands `open` the options of its own kind.
template <typename Options, typename Open>
SourceFactory opening(Open open) {
  return [open](const app::config::SourceConfig& source, const pipeline::EntityDeclaration& entity) {
    return open(std::get<Options>(source.options), entity);
  };
}

std::shared_ptr<const pipeline::RecordLayout> layout_of(const pipeline::EntityDeclaration& entity) {
  return std::make_shared<const pipeline::RecordLayout>(pipeline::record_layout(entity));
}

// A postgres source reads its database's URL from the environment when a run opens it.
std::vector<std::string> check_postgres_source(const app::config::SourceConfig& source) {
  const auto& postgres = std::get<connectors::postgres::Options>(source.options);
  const char* url = std::getenv(postgres.url_env.c_str());
  if (url != nullptr && *url != '\0') return {};
  return {postgres.origin + ".url_env: environment variable " + postgres.url_env +
          " is not set (it must hold the source database's URL)"};
}

const std::vector<SourceWiring>& source_wirings() {
  static const connectors::file::FileRecordDecoder file_decoder;
  static const connectors::http_api::HttpRecordDecoder http_decoder;
  static const std::vector<SourceWiring> wirings = {
      {.open = opening<connectors::file::FileSourceOptions>([](const auto& file, const auto& entity) {
         return connectors::file::open_file_source(file.path, file.format, file.settle, layout_of(entity),
                                                   file.on_change);
       }),
       .formats = {connectors::file::to_string(connectors::file::Format::kCsv),
                   connectors::file::to_string(connectors::file::Format::kJsonl)},
       .decoder = &file_decoder},
      // Rows are stored as JSON Lines (the file decoder's) and decode through the quarantine's
      // decoder: a release decodes a row's raw JSON object exactly as the run did.
      {.open = opening<connectors::postgres::Options>([](const auto& postgres, const auto& entity) {
         return connectors::postgres::open_postgres_source(postgres, entity, quarantine_decoder());
       }),
       .check = check_postgres_source},
      {.open = opening<connectors::http_api::HttpSourceOptions>([](const auto& http, const auto& entity) {
         return connectors::http_api::open_http_source(http, layout_of(entity));
       }),
       .formats = {connectors::http_api::kRecordFormat},
       .decoder = &http_decoder},
      // One partition: nats.partition, set per partition by partition_requests. A message is
      // stored as one JSON object, the http source's format.
      {.open = opening<connectors::nats::NatsSourceOptions>([](const auto& nats, const auto& entity) {
         return connectors::nats::open_nats_partition(nats, layout_of(entity));
       }),
       .watch = [](const app::config::SourceConfig& source) {
         return connectors::nats::watch_partitions(std::get<connectors::nats::NatsSourceOptions>(source.options));
       }},
  };
  return wirings;
}

// A release decodes a quarantined record with the decoder of the kind that declares its stored format.
class DecoderByFormat final : public pipeline::RecordDecoder {
 public:
  pipeline::DecodedRecord decode(std::string_view format, std::string_view decode_context, std::string_view raw,
                                 const std::string& origin, const pipeline::RecordLayout& layout) const override {
    for (const SourceWiring& wiring : source_wirings()) {
      if (std::ranges::find(wiring.formats, format) != wiring.formats.end()) {
        return wiring.decoder->decode(format, decode_context, raw, origin, layout);
      }
    }
    pipeline::DecodedRecord undecodable;
    undecodable.raw = std::string(raw);
    undecodable.position.file = origin;
    undecodable.decode_error = "no source kind decodes the stored format '" + std::string(format) + "'";
    return undecodable;
  }
};

const SourceWiring& source_wiring(const app::config::SourceConfig& source) {
  const auto& wirings = source_wirings();
  if (source.options.index() >= wirings.size()) {
    throw std::invalid_argument("no factory is registered for source kind '" + std::string(source.kind()) + "'");
  }
  return wirings[source.options.index()];
}

// What `check` finds of a destination whose options the relay builds from the environment:
// the relay's own start-up check.
template <typename Options>
DestinationCheck checking(Options (*options)(const app::config::DestinationConfig&, const app::config::RelayConfig&)) {
  return [options](const app::config::DestinationConfig& destination, const app::config::Config& config) {
    try {
      options(destination, config.relay);
    } catch (const app::config::ConfigError& error) {
      return std::vector<std::string>{error.what()};
    }
    return std::vector<std::string>{};
  };
}

// A view destination names a view Tidemark ships.
std::vector<std::string> check_view_destination(const app::config::DestinationConfig& destination,
                                                const app::config::Config&) {
  if (pipeline::views::find_view(destination.name) != nullptr) return {};
  return {"destination '" + destination.name + "' is of kind " + std::string(destination.kind()) + ", but tidemark has no such view (" +
          pipeline::views::view_list(", ") + ")"};
}

// How a destination kind's sinks open and what `check` asks of it, in the order of
// DestinationOptions' alternatives (app::config::DestinationConfig): one line per kind.
struct SinkWiring {
  SinkFactory open;
  DestinationCheck check;
};

const std::vector<SinkWiring>& sink_wirings() {
  static const std::vector<SinkWiring> wirings = {
      {[](const SinkContext& context) { return make_webhook_sinks(context.config); }, checking(&webhook_options)},
      {[](const SinkContext& context) {
         return make_view_sinks(context.config, context.database_url, context.metrics);
       },
       check_view_destination},
      {[](const SinkContext& context) { return make_nats_sinks(context.config, context.metrics); },
       checking(&nats_options)},
  };
  return wirings;
}

}  // namespace

const SourceFactory& source_factory(const app::config::SourceConfig& source) { return source_wiring(source).open; }

const SourceCheck& source_check(const app::config::SourceConfig& source) { return source_wiring(source).check; }

std::unique_ptr<pipeline::PartitionWatcher> watch_partitions(const app::config::SourceConfig& source) {
  const SourceWiring& wiring = source_wiring(source);
  if (!wiring.watch) {
    throw std::invalid_argument("a source of kind '" + std::string(source.kind()) + "' has no partitions to watch");
  }
  return wiring.watch(source);
}

const pipeline::RecordDecoder& quarantine_decoder() {
  static const DecoderByFormat decoder;
  return decoder;
}

const DestinationCheck& destination_check(const app::config::DestinationConfig& destination) {
  const auto& wirings = sink_wirings();
  if (destination.options.index() >= wirings.size()) {
    throw std::invalid_argument("no factory is registered for destination kind '" + std::string(destination.kind()) +
                                "'");
  }
  return wirings[destination.options.index()].check;
}

std::vector<SinkFactory> sink_factories() {
  std::vector<SinkFactory> factories;
  for (const auto& wiring : sink_wirings()) factories.push_back(wiring.open);
  return factories;
}

}  // namespace tidemark::app
