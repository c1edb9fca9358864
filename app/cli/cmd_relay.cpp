#include <iostream>

#include <spdlog/spdlog.h>

#include "app/cli/commands.hpp"
#include "app/cli/number_check.hpp"
#include "app/cli/signals.hpp"
#include "app/wiring/options.hpp"
#include "app/wiring/sinks.hpp"
#include "pipeline/store/pg/database.hpp"
#include "pipeline/store/outbox.hpp"
#include "pipeline/relay/relay.hpp"

namespace tidemark::app {

namespace {

struct RelayCommandOptions {
  DatabaseOptions database;
  bool once = false;
  std::string status;
  std::string destination;
  int limit = 100;
  std::int64_t id = 0;
  bool all_dead = false;
};

void print_table(const std::vector<pipeline::OutboxEntry>& entries) {
  std::cout << "id\tdestination\tstatus\tattempts\tnext_attempt_at\tdelivered_at\tidempotency_key\tlast_error\n";
  for (const auto& entry : entries) {
    std::cout << entry.id << '\t' << entry.destination << '\t' << entry.status << '\t' << entry.attempts << '\t'
              << (entry.status == "pending" ? entry.next_attempt_at : "-") << '\t'
              << (entry.delivered_at.empty() ? "-" : entry.delivered_at) << '\t' << entry.idempotency_key << '\t'
              << (entry.last_error.empty() ? "-" : entry.last_error) << '\n';
  }
}

}  // namespace

void register_relay_commands(CLI::App& root, int& exit_code) {
  auto options = std::make_shared<RelayCommandOptions>();

  auto* relay = root.add_subcommand(
      "relay",
      "Deliver outbox events to the config's destinations (HTTP webhooks, NATS JetStream streams, views):\n"
      "at least once, with the same idempotency key every time, in per-account order, retried with\n"
      "backoff until relay.max_attempts (then dead).\n"
      "Several relays may run at once. See docs/delivery.md.");
  options->database.add_to(*relay);
  relay->get_option("--config")->description(
      "YAML configuration file, required: the destinations to deliver to come from it (see docs/configuration.md)");
  relay->add_flag("--once", options->once, "Deliver what is due now, wait for the answers, and exit (for cron and tests)");
  relay->callback([&, options] {
    const auto config = options->database.load_config();
    if (!config) throw UsageError("relay needs --config FILE: the destinations to deliver to come from the config");
    const std::string url = options->database.connect_url(config);
    // Before the sinks and the relay start their threads (see block_stop_signals).
    if (!options->once) block_stop_signals();
    auto sinks = make_sinks(*config, url);
    if (sinks.empty()) {
      spdlog::warn("the config has no destinations; nothing to deliver");
      exit_code = kExitOk;
      return;
    }
    pipeline::relay::Relay relay(url, std::move(sinks), relay_options(*config));
    pipeline::relay::RelayStats stats;
    if (options->once) {
      stats = relay.drain();
    } else {
      // SIGINT/SIGTERM: no new claims; the answers in flight are recorded, then run() returns.
      spdlog::info("relay started");
      run_until_stopped([&] { stats = relay.run(); },
                        [&](int) {
                          spdlog::info("stopping: waiting for deliveries in flight");
                          relay.stop();
                        },
                        SecondSignal::kStopAgain);
    }
    spdlog::info("relay: {} delivered, {} to retry later, {} dead", stats.delivered, stats.retried, stats.dead);
    exit_code = kExitOk;
  });

  auto* outbox = root.add_subcommand("outbox", "Inspect outbox events and re-drive dead ones");
  outbox->require_subcommand(1);

  auto* list = outbox->add_subcommand("list", "List outbox events, oldest first");
  options->database.add_to(*list);
  list->add_option("--status", options->status, "Only events with this status")
      ->check(CLI::IsMember({"pending", "delivered", "dead"}));
  list->add_option("--destination", options->destination, "Only events for this destination");
  list->add_option("--limit", options->limit, "At most this many rows (default 100)")->check(whole_number());
  list->callback([&, options] {
    auto connection = options->database.connect_existing(options->database.load_config());
    pipeline::OutboxFilter filter;
    if (!options->status.empty()) filter.status = options->status;
    if (!options->destination.empty()) filter.destination = options->destination;
    filter.limit = static_cast<std::size_t>(options->limit);
    const auto entries = pipeline::list_outbox(*connection, filter);
    print_table(entries);
    std::cerr << entries.size() << " event(s)\n";
    exit_code = kExitOk;
  });

  auto* retry = outbox->add_subcommand(
      "retry", "Make a dead (or waiting) event due now with a fresh attempt budget; the relay sends it again");
  options->database.add_to(*retry);
  auto* id_option = retry->add_option("ID", options->id, "Outbox event id (from `outbox list`)");
  auto* all_dead_option = retry->add_flag("--all-dead", options->all_dead, "Re-drive every dead event");
  id_option->excludes(all_dead_option);
  retry->callback([&, options, id_option] {
    if (id_option->count() == 0 && !options->all_dead) throw UsageError("outbox retry needs an event ID or --all-dead");
    auto connection = options->database.connect(options->database.load_config());
    if (options->all_dead) {
      std::cout << pipeline::retry_dead_outbox_events(*connection) << " dead event(s) re-driven\n";
    } else if (pipeline::retry_outbox_event(*connection, options->id)) {
      std::cout << "outbox event " << options->id << " re-driven\n";
    } else {
      throw UsageError("outbox event " + std::to_string(options->id) +
                       " does not exist or was already delivered; see `tidemark outbox list`");
    }
    exit_code = kExitOk;
  });
}

}  // namespace tidemark::app
