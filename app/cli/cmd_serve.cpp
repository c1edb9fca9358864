#include <cstdlib>

#include <spdlog/spdlog.h>

#include "app/cli/commands.hpp"
#include "app/cli/signals.hpp"
#include "app/serve/http_server.hpp"
#include "app/serve/service.hpp"
#include "connectors/http/signature.hpp"

namespace tidemark::app {

namespace {

struct ServeCommandOptions {
  DatabaseOptions database;
  std::string listen;
};

std::optional<std::string> environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

}  // namespace

void register_serve_command(CLI::App& root, int& exit_code) {
  auto options = std::make_shared<ServeCommandOptions>();
  auto* serve = root.add_subcommand(
      "serve",
      "Run as a service: the config's pipelines on their schedules, run triggers over signed webhooks, run and\n"
      "quarantine status, the outbox relay and Prometheus metrics on one HTTP listener. SIGTERM/SIGINT stop\n"
      "after the batches in hand commit (a second signal exits at once). See docs/operations.md and docs/api.md.");
  options->database.add_to(*serve);
  serve->get_option("--config")->description(
      "YAML configuration file, required: the pipelines, schedules and destinations come from it (see docs/configuration.md)");
  serve->add_option("--listen", options->listen, "HOST:PORT to listen on (default: the config's http.listen, "
                                                 "127.0.0.1:8080; port 0 picks a free port, logged at start)");
  serve->callback([&, options] {
    auto config = options->database.load_config();
    if (!config) throw UsageError("serve needs --config FILE: the pipelines, schedules and destinations come from it");
    serve::ServeOptions serve_options;
    serve_options.listen = options->listen.empty() ? config->http.listen : options->listen;
    if (const auto colon = serve_options.listen.rfind(':'); colon == std::string::npos || colon == 0) {
      throw UsageError("--listen " + serve_options.listen + ": expected HOST:PORT (e.g. 127.0.0.1:8080)");
    }
    if (const auto secret = environment("TIDEMARK_WEBHOOK_SECRET")) {
      serve_options.api.webhook_key = connectors::http::decode_secret(*secret);
      if (!serve_options.api.webhook_key) {
        throw UsageError("TIDEMARK_WEBHOOK_SECRET: expected whsec_ followed by base64 (the Standard Webhooks form)");
      }
    } else {
      spdlog::warn("TIDEMARK_WEBHOOK_SECRET is not set: POST /v1/pipelines/NAME/runs answers 401");
    }
    serve_options.api.api_token = environment("TIDEMARK_API_TOKEN");
    if (!serve_options.api.api_token) {
      // Without a token the quarantine's raw records can be read and released by anyone who
      // can connect: only this host's users, unless the operator says otherwise.
      if (!config->http.allow_unauthenticated && !serve::is_loopback_listen(serve_options.listen)) {
        throw UsageError("--listen " + serve_options.listen +
                         ": refusing a non-loopback address without TIDEMARK_API_TOKEN (anyone who can connect could "
                         "read and release quarantined records); set TIDEMARK_API_TOKEN, listen on 127.0.0.1, or set "
                         "http.allow_unauthenticated: true in the config");
      }
      spdlog::warn("TIDEMARK_API_TOKEN is not set: the /v1 read and release endpoints answer anyone who can connect "
                   "to {}", serve_options.listen);
    }
    {
      auto migrated = options->database.resolve(config, /*create_embedded=*/true);
      serve_options.database_url = std::move(migrated.url);
      // Before serving: a table that cannot hold its entity stops serve here (exit 2), not each run.
      ensure_entity_tables(*config, *migrated.connection, [](const std::string& done) { spdlog::info("{}", done); });
    }
    serve_options.config = std::move(*config);
    block_stop_signals();  // before the service starts its threads
    serve::Service service(std::move(serve_options));
    StopSignals signals(
        service.io_context(),
        [&service](int signal) {
          spdlog::info("signal {}: stopping (the batches in hand commit first; a second signal exits at once)", signal);
          service.request_stop();
        },
        SecondSignal::kExitAtOnce);
    exit_code = service.run([&signals] { signals.cancel(); });
  });
}

}  // namespace tidemark::app
