// tidemark retention run [--config FILE] [--database URL] [--dry-run]: the retention job that
// `serve` runs hourly, once, for cron users (docs/retention.md).
#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>

#include "app/cli/commands.hpp"
#include "app/retention/retention.hpp"
#include "app/wiring/options.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::app {

namespace {

struct RetentionCommandOptions {
  DatabaseOptions database;
  bool dry_run = false;
};

}  // namespace

void register_retention_command(CLI::App& root, int& exit_code) {
  auto* group = root.add_subcommand("retention", "Delete what is older than its window of the config's retention:");
  group->require_subcommand(1);
  auto options = std::make_shared<RetentionCommandOptions>();
  auto* run = group->add_subcommand(
      "run",
      "Delete, in chunks of 5000 rows per transaction, changes of the outbox's log older than\n"
      "retention.outbox that every destination has delivered (kept while a dead letter or a view rebuild\n"
      "needs them), runs and their ledger older than retention.runs (rolled up\n"
      "into tidemark_run_daily first), released quarantine entries older than retention.quarantine,\n"
      "webhook-ids older than retention.requests, view inbox rows older than retention.inbox, and the\n"
      "registry rows of files no run has found for retention.runs.\n"
      "Prints the rows deleted per kind; `tidemark serve` runs the same job hourly");
  options->database.add_to(*run);
  run->add_flag("--dry-run", options->dry_run, "Print how many rows each kind would delete; delete nothing");
  run->callback([&, options] {
    const auto config = options->database.load_config();
    retention::Options retention_options;
    if (config) {
      retention_options.windows = config->retention;
      retention_options.redelivery = redelivery(config->relay);
    } else {
      retention_options.redelivery = redelivery(app::config::RelayConfig{});
    }
    retention_options.dry_run = options->dry_run;
    auto connection = options->database.connect(config);
    const auto results = retention::run_retention(*connection, retention_options);
    std::cout << "kind\t" << (options->dry_run ? "would_delete" : "deleted") << '\n';
    for (const auto& result : results) {
      std::cout << result.kind << '\t' << result.deleted << '\n';
      for (const auto& reason : result.kept) std::cerr << "retention: " << reason << '\n';
    }
    exit_code = kExitOk;
  });
}

}  // namespace tidemark::app
