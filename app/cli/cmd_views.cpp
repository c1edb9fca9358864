// tidemark views list | rebuild NAME --version N | drop NAME --version N | cleanup
#include <iomanip>
#include <iostream>
#include <set>

#include <spdlog/spdlog.h>

#include "app/cli/commands.hpp"
#include "app/cli/number_check.hpp"
#include "app/wiring/options.hpp"
#include "pipeline/store/pg/database.hpp"
#include "pipeline/views/admin.hpp"
#include "pipeline/views/registry.hpp"

namespace tidemark::app {

namespace {

// The config's default and the views' own are one window.
static_assert(app::config::RetentionConfig{}.inbox == pipeline::views::kDefaultInboxRetention);
const std::string kDefaultRetention = pipeline::format_duration(pipeline::views::kDefaultInboxRetention);

struct ViewsCommandOptions {
  DatabaseOptions database;
  std::string name;
  int version = 0;
  std::string retention;  // empty: the config's retention.inbox, else kDefaultRetention
};

// ViewError is the user's request being impossible as asked: a usage error (exit 2).
template <class Work>
void as_usage_errors(Work&& work) {
  try {
    work();
  } catch (const pipeline::views::ViewError& error) {
    throw UsageError(error.what());
  }
}

void add_name_and_version(CLI::App& command, ViewsCommandOptions& options) {
  command.add_option("NAME", options.name, "The view: " + pipeline::views::view_list(" or "))
      ->required()
      ->check(CLI::IsMember(pipeline::views::view_names()));
  command.add_option("--version", options.version, "The version (its table is NAME_v<N>)")
      ->required()
      ->check(whole_number());
}

}  // namespace

void register_views_command(CLI::App& root, int& exit_code) {
  auto options = std::make_shared<ViewsCommandOptions>();
  auto* views = root.add_subcommand(
      "views",
      "Materialized views fed by the outbox (account_balance, daily_totals): list versions and lag, rebuild a\n"
      "new version while the old one serves, retire one, clean up the inbox. See docs/views.md.");
  views->require_subcommand(1);

  auto* list = views->add_subcommand("list", "Every version of every view, its status and lag");
  options->database.add_to(*list);
  list->callback([&, options] {
    auto connection = options->database.connect_existing(options->database.load_config());
    const auto versions = pipeline::views::list_views(*connection);
    std::cout << "view\tversion\ttable\tstatus\tlag_seconds\tpending\tdead\tcreated_at\tposition\n";
    std::set<std::string> stuck;
    for (const auto& version : versions) {
      std::cout << version.name << '\t' << version.version << '\t'
                << pipeline::views::table_name(version.name, version.version) << '\t' << version.status << '\t'
                << std::fixed << std::setprecision(3) << version.lag_seconds << '\t' << version.pending << '\t'
                << version.dead << '\t' << version.created_at << '\t' << version.position << '\n';
      if (version.dead > 0 && version.status != "retired") stuck.insert(version.name);
    }
    std::cerr << versions.size() << " view version(s)\n";
    for (const auto& name : stuck) {
      // A dead view event is one the view will never apply: a gap left by an older Tidemark
      // (sequences shared by all destinations), or an event that could not be applied.
      std::cerr << "view " << name << " has dead events it will never apply (see `tidemark outbox list --status dead "
                << "--destination " << name << "`): run `tidemark views rebuild " << name
                << " --version N` with a new N, then drop the old version\n";
    }
    exit_code = kExitOk;
  });

  auto* rebuild = views->add_subcommand(
      "rebuild", "Create NAME_v<N> and fill it while the other versions keep serving; it is live when this returns");
  options->database.add_to(*rebuild);
  add_name_and_version(*rebuild, *options);
  rebuild->callback([&, options] {
    const auto config = options->database.load_config();
    const pipeline::db::Database database(options->database.connect_url(config));
    // A view reflects the pipelines that list it: a snapshot of the state is its content only
    // when those are all the pipelines that wrote the state.
    const std::vector<std::string> feeders =
        config ? config->pipelines_feeding(options->name) : std::vector<std::string>{};
    as_usage_errors([&] {
      const auto source = [&] {
        auto connection = database.connect();
        return pipeline::views::rebuild_source(*connection, options->name, feeders);
      }();
      spdlog::info("rebuilding {} from {}", pipeline::views::table_name(options->name, options->version),
                   source == pipeline::views::RebuildSource::kSnapshot
                       ? "a snapshot of transaction_state (every pipeline that wrote it feeds the view)"
                       : "the full history of its events in the outbox");
      const auto rows = pipeline::views::rebuild_view(database, options->name, options->version, source);
      std::cout << pipeline::views::table_name(options->name, options->version) << " is live with " << rows
                << " rows; retire the old version with `tidemark views drop " << options->name
                << " --version M` once readers use the new one\n";
    });
    exit_code = kExitOk;
  });

  auto* drop = views->add_subcommand("drop", "Retire one version: drop its table and its inbox records");
  options->database.add_to(*drop);
  add_name_and_version(*drop, *options);
  drop->callback([&, options] {
    auto connection = options->database.connect(options->database.load_config());
    as_usage_errors([&] { pipeline::views::drop_view(*connection, options->name, options->version); });
    std::cout << pipeline::views::table_name(options->name, options->version) << " retired\n";
    exit_code = kExitOk;
  });

  auto* cleanup = views->add_subcommand(
      "cleanup",
      "Delete inbox records older than --retention; refused when the retention does not exceed the longest\n"
      "time the relay config allows between a first delivery and a redelivery");
  options->database.add_to(*cleanup);
  cleanup->add_option("--retention", options->retention,
                      "Keep inbox records this long, e.g. 72h (default: retention.inbox of --config, else " +
                          kDefaultRetention + ")");
  cleanup->callback([&, options] {
    const auto config = options->database.load_config();
    if (options->retention.empty()) {
      options->retention = pipeline::format_duration(config ? config->retention.inbox
                                                             : pipeline::Duration(pipeline::views::kDefaultInboxRetention));
    }
    const auto retention = app::config::parse_duration(options->retention);
    if (!retention) {
      throw UsageError("--retention '" + options->retention + "' is not a duration: an integer with ms, s, m or h");
    }
    const app::config::RelayConfig relay_config = config ? config->relay : app::config::RelayConfig{};
    auto connection = options->database.connect(config);
    as_usage_errors([&] {
      const auto deleted = pipeline::views::cleanup_inbox(*connection, *retention, redelivery(relay_config));
      std::cout << deleted << " inbox record(s) older than " << options->retention << " deleted\n";
    });
    exit_code = kExitOk;
  });
}

}  // namespace tidemark::app
