#include "app/wiring/sinks.hpp"

#include "connectors/http/webhook_sink.hpp"
#include "app/wiring/options.hpp"

namespace tidemark::app {

pipeline::relay::Sinks make_sinks(const pipeline::Config& config, const std::string& database_url) {
  pipeline::relay::Sinks sinks = connectors::http::make_webhook_sinks(config);
  sinks.merge(make_view_sinks(config, database_url));
  return sinks;
}

}  // namespace tidemark::app
