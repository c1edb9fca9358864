#include "app/wiring/sinks.hpp"

#include <cstdlib>

#include "app/wiring/registry.hpp"
#include "connectors/http/options_error.hpp"
#include "connectors/http/signature.hpp"

namespace tidemark::app {

using pipeline::ConfigError;

pipeline::relay::Sinks make_sinks(const pipeline::Config& config, const std::string& database_url) {
  pipeline::relay::Sinks sinks;
  for (const auto kind : sink_kinds()) sinks.merge(sink_factory(kind)(SinkContext{config, database_url}));
  return sinks;
}

connectors::http::WebhookOptions webhook_options(const pipeline::DestinationConfig& destination,
                                                 const pipeline::RelayConfig& relay) {
  const std::string where = "destination '" + destination.name + "'";
  if (destination.secret_env.empty()) throw ConfigError(where + " has no secret_env naming its signing secret");
  const char* secret = std::getenv(destination.secret_env.c_str());
  if (secret == nullptr || *secret == '\0') {
    throw ConfigError(where + ": environment variable " + destination.secret_env +
                      " is not set; set it to the destination's whsec_… signing secret");
  }
  auto key = connectors::http::decode_secret(secret);
  if (!key) {
    throw ConfigError(where + ": environment variable " + destination.secret_env +
                      " does not hold a Standard Webhooks secret (whsec_ followed by base64)");
  }
  connectors::http::WebhookOptions options;
  options.url = destination.url;
  options.ca_file = destination.ca_file;
  options.signing_key = std::move(*key);
  options.connect_timeout = relay.connect_timeout;
  options.request_timeout = relay.request_timeout;
  options.max_idle_connections = relay.max_in_flight;
  return options;
}

pipeline::relay::Sinks make_webhook_sinks(const pipeline::Config& config) {
  pipeline::relay::Sinks sinks;
  for (const auto& [name, destination] : config.destinations()) {
    if (destination.kind != pipeline::DestinationKind::kHttp) continue;
    try {
      sinks.emplace(name, std::make_unique<connectors::http::WebhookSink>(webhook_options(destination, config.relay)));
    } catch (const connectors::http::OptionsError& error) {
      // A destination that cannot be used is a configuration error (exit 2), in the connector's words.
      throw ConfigError(error.what());
    }
  }
  return sinks;
}

}  // namespace tidemark::app
