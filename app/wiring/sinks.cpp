#include "app/wiring/sinks.hpp"

#include <cstdlib>

#include "app/wiring/options.hpp"
#include "app/wiring/registry.hpp"
#include "connectors/http/options_error.hpp"
#include "connectors/http/signature.hpp"
#include "metrics/metrics.hpp"

namespace tidemark::app {

using app::config::ConfigError;

pipeline::Sinks make_sinks(const app::config::Config& config, const std::string& database_url,
                                  metrics::Metrics* metrics) {
  pipeline::Sinks sinks;
  for (const auto& factory : sink_factories()) sinks.merge(factory(SinkContext{config, database_url, metrics}));
  return sinks;
}

connectors::http::WebhookOptions webhook_options(const app::config::DestinationConfig& destination,
                                                 const app::config::RelayConfig& relay) {
  const std::string where = "destination '" + destination.name + "'";
  const auto& http = std::get<connectors::http::HttpDestinationOptions>(destination.options);
  if (http.secret_env.empty()) throw ConfigError(where + " has no secret_env naming its signing secret");
  const char* secret = std::getenv(http.secret_env.c_str());
  if (secret == nullptr || *secret == '\0') {
    throw ConfigError(where + ": environment variable " + http.secret_env +
                      " is not set; set it to the destination's whsec_… signing secret");
  }
  auto key = connectors::http::decode_secret(secret);
  if (!key) {
    throw ConfigError(where + ": environment variable " + http.secret_env +
                      " does not hold a Standard Webhooks secret (whsec_ followed by base64)");
  }
  connectors::http::WebhookOptions options;
  options.url = http.url;
  options.ca_file = http.ca_file;
  options.signing_key = std::move(*key);
  options.connect_timeout = relay.connect_timeout;
  options.request_timeout = relay.request_timeout;
  options.max_idle_connections = destination.max_in_flight.value_or(relay.max_in_flight);
  return options;
}

pipeline::Sinks make_webhook_sinks(const app::config::Config& config) {
  pipeline::Sinks sinks;
  for (const auto& [name, destination] : config.destinations()) {
    if (destination.get_if<connectors::http::HttpDestinationOptions>() == nullptr) continue;
    try {
      sinks.emplace(name, std::make_unique<connectors::http::WebhookSink>(webhook_options(destination, config.relay)));
    } catch (const connectors::http::OptionsError& error) {
      // A destination that cannot be used is a configuration error (exit 2), in the connector's words.
      throw ConfigError(error.what());
    }
  }
  return sinks;
}

connectors::nats_sink::NatsSinkOptions nats_options(const app::config::DestinationConfig& destination,
                                                    const app::config::RelayConfig& relay) {
  const auto& nats = std::get<connectors::nats_sink::NatsDestinationOptions>(destination.options);
  connectors::nats_sink::NatsSinkOptions options;
  options.connection.servers = nats.servers;
  if (!nats.creds_env.empty()) {
    const char* path = std::getenv(nats.creds_env.c_str());
    if (path == nullptr || *path == '\0') {
      throw ConfigError("destination '" + destination.name + "': environment variable " + nats.creds_env +
                        " is not set; set it to the path of the NATS credentials (.creds) file");
    }
    options.connection.credentials_file = path;
  }
  options.connection.connect_timeout = relay.connect_timeout;
  options.subject = nats.subject;
  options.stream = nats.stream;
  options.redelivery_horizon = pipeline::views::redelivery_horizon(redelivery(relay));
  options.ack_timeout = relay.request_timeout;
  options.max_in_flight = destination.max_in_flight.value_or(relay.max_in_flight);
  return options;
}

pipeline::Sinks make_nats_sinks(const app::config::Config& config, metrics::Metrics* metrics) {
  pipeline::Sinks sinks;
  for (const auto& [name, destination] : config.destinations()) {
    if (destination.get_if<connectors::nats_sink::NatsDestinationOptions>() == nullptr) continue;
    auto options = nats_options(destination, config.relay);
    if (metrics != nullptr) {
      // Exported at 0 from start-up, so that a dashboard sees the series before the first one.
      auto& duplicates = metrics->nats_duplicates_total.Add({{"destination", name}});
      options.on_duplicate = [&duplicates] { duplicates.Increment(); };
    }
    try {
      sinks.emplace(name, std::make_unique<connectors::nats_sink::NatsSink>(std::move(options)));
    } catch (const connectors::nats_sink::StreamRefused& error) {
      throw ConfigError("destination '" + name + "': " + error.what());
    }
  }
  return sinks;
}

}  // namespace tidemark::app
