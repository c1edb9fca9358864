#pragma once
// Every destination of a config as a relay sink: webhooks over HTTP, views in-process.
// `relay` and `serve` both deliver through this one list.
#include <string>

#include "app/config/config.hpp"
#include "pipeline/relay/relay.hpp"

namespace tidemark::app {

pipeline::relay::Sinks make_sinks(const pipeline::Config& config, const std::string& database_url);

}  // namespace tidemark::app
