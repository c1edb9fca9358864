#pragma once
// Every destination of a config as a relay sink: webhooks over HTTP, views in-process.
// `relay` and `serve` both deliver through this one list.
#include <string>

#include "app/config/config.hpp"
#include "connectors/http/webhook_sink.hpp"
#include "connectors/nats_sink/nats_sink.hpp"
#include "pipeline/relay/relay.hpp"

namespace tidemark::metrics {
struct Metrics;
}  // namespace tidemark::metrics

namespace tidemark::app {

// One sink per destination of the config, by destination name: each destination kind's
// factory in app/wiring/registry.
// `metrics`, when given, receives what the sinks count themselves (NATS duplicates).
pipeline::Sinks make_sinks(const app::config::Config& config, const std::string& database_url,
                                  metrics::Metrics* metrics = nullptr);

// The options of an http destination; the secret comes from the variable its secret_env
// names (read here: a connector does not read the environment). ConfigError names the
// destination and the variable when it is unset or malformed.
connectors::http::WebhookOptions webhook_options(const app::config::DestinationConfig& destination,
                                                 const app::config::RelayConfig& relay);

// One sink per http destination of the config, by destination name. ConfigError when a
// destination's URL or trust store cannot be used.
pipeline::Sinks make_webhook_sinks(const app::config::Config& config);

// The options of a nats destination: its servers, subject and stream, the relay's timeouts
// and redelivery horizon (the stream's duplicate window must exceed it), and the credentials
// file named by the variable creds_env names (read here: a connector does not read the
// environment). ConfigError naming the destination and the variable when it is unset.
connectors::nats_sink::NatsSinkOptions nats_options(const app::config::DestinationConfig& destination,
                                                    const app::config::RelayConfig& relay);

// One sink per nats destination of the config, by destination name; each counts its
// duplicates in `metrics` (when given) as tidemark_nats_duplicates_total{destination}.
// ConfigError (exit 2) when a stream is missing or its duplicate window does not exceed
// the relay's redelivery horizon; NatsError (exit 1) when no server answers.
pipeline::Sinks make_nats_sinks(const app::config::Config& config, metrics::Metrics* metrics);

}  // namespace tidemark::app
