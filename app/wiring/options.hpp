#pragma once
// The config's sections turned into the option structs the relay and the views own: those
// layers never see the config (docs/architecture.md, "Layers").
#include <string>

#include "app/config/config.hpp"
#include "pipeline/core/sink.hpp"
#include "pipeline/relay/relay.hpp"
#include "pipeline/views/admin.hpp"

namespace tidemark::metrics {
struct Metrics;
}  // namespace tidemark::metrics

namespace tidemark::app {

// Options from the `relay:` config, with a lease of twice a whole attempt's timeouts
// (at least 2 s), so that only a dead or hung relay ever loses its lease.
pipeline::relay::RelayOptions relay_options(const app::config::RelayConfig& config);
// The same, with the windows of the destinations that set their own max_in_flight.
pipeline::relay::RelayOptions relay_options(const app::config::Config& config);

// How late the relay configured by `config` may deliver an event again, for the inbox
// cleanup's check (docs/rules.md rule 16).
pipeline::views::Redelivery redelivery(const app::config::RelayConfig& config);

// One ViewSink per `kind: view` destination of `config`, keyed by destination name (the
// view's name); creates version 1 of views that have none. ConfigError for a view name
// Tidemark does not ship. `metrics`, when given, counts each view's events as
// tidemark_view_events_total{view,result}.
pipeline::Sinks make_view_sinks(const app::config::Config& config, const std::string& database_url,
                                metrics::Metrics* metrics = nullptr);

}  // namespace tidemark::app
