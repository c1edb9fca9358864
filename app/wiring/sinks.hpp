#pragma once
// Every destination of a config as a relay sink: webhooks over HTTP, views in-process.
// `relay` and `serve` both deliver through this one list.
#include <string>

#include "app/config/config.hpp"
#include "connectors/http/webhook_sink.hpp"
#include "pipeline/relay/relay.hpp"

namespace tidemark::app {

// One sink per destination of the config, by destination name: each destination kind's
// factory in app/wiring/registry.
pipeline::relay::Sinks make_sinks(const pipeline::Config& config, const std::string& database_url);

// The options of an http destination; the secret comes from the variable its secret_env
// names (read here: a connector does not read the environment). ConfigError names the
// destination and the variable when it is unset or malformed.
connectors::http::WebhookOptions webhook_options(const pipeline::DestinationConfig& destination,
                                                 const pipeline::RelayConfig& relay);

// One sink per http destination of the config, by destination name. ConfigError when a
// destination's URL or trust store cannot be used.
pipeline::relay::Sinks make_webhook_sinks(const pipeline::Config& config);

}  // namespace tidemark::app
