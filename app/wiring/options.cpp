#include "app/wiring/options.hpp"

#include <algorithm>

#include "pipeline/views/registry.hpp"
#include "pipeline/views/view_sink.hpp"

namespace tidemark::app {

namespace {

constexpr pipeline::Duration kMinimumLease = std::chrono::seconds(2);

}  // namespace

pipeline::relay::RelayOptions relay_options(const app::config::RelayConfig& config) {
  pipeline::relay::RelayOptions options;
  options.config = {.max_attempts = config.max_attempts,
                    .base_delay = config.base_delay,
                    .max_delay = config.max_delay,
                    .max_in_flight = config.max_in_flight,
                    .connect_timeout = config.connect_timeout,
                    .request_timeout = config.request_timeout};
  options.lease = std::max(kMinimumLease, 2 * (config.connect_timeout + config.request_timeout));
  return options;
}

pipeline::relay::RelayOptions relay_options(const app::config::Config& config) {
  auto options = relay_options(config.relay);
  for (const auto& [name, destination] : config.destinations()) {
    if (destination.max_in_flight) options.windows[name] = *destination.max_in_flight;
  }
  return options;
}

pipeline::views::Redelivery redelivery(const app::config::RelayConfig& config) {
  return {.max_attempts = config.max_attempts,
          .base_delay = config.base_delay,
          .max_delay = config.max_delay,
          .lease = relay_options(config).lease};
}

pipeline::Sinks make_view_sinks(const app::config::Config& config, const std::string& database_url,
                                metrics::Metrics* metrics) {
  const std::vector<std::string> names = config.destination_names_with(&app::config::DestinationCapabilities::view);
  for (const auto& name : names) {
    if (pipeline::views::find_view(name) == nullptr) {
      throw app::config::ConfigError("destination '" + name + "' is of kind view, but tidemark has no such view (" +
                                  pipeline::views::view_list(", ") + ")");
    }
  }
  return pipeline::views::make_view_sinks(names, database_url, metrics);
}

}  // namespace tidemark::app
