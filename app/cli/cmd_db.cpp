#include <iostream>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "app/cli/commands.hpp"
#include "pipeline/store/cluster.hpp"
#include "pipeline/store/entity_schema.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::app {

namespace {

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// Creates or brings up to date the table of every entity `config` declares (INTERFACE.md
// "Entities": `migrate --config` does, `check` never does) and says what changed. A table
// that cannot hold its declaration is a configuration error: exit 2 with the message.
void ensure_entity_tables(const pipeline::Config& config, const std::string& url) {
  if (config.entities.empty()) return;
  auto connection = pipeline::db::connect(url);
  for (const auto& [name, entity] : config.entities) {
    pipeline::db::EntityTableChanges changes;
    try {
      changes = pipeline::db::ensure_entity_table(*connection, entity);
    } catch (const pipeline::db::EntitySchemaError& error) {
      throw UsageError(error.what());
    }
    std::string done = changes.created ? "created" : changes.adopted ? "adopted" : "up to date";
    if (!changes.added_columns.empty()) done += ", columns added: " + listed(changes.added_columns);
    std::cout << "entity " << name << ": table " << entity.table << " " << done << "\n";
    if (!changes.unused_columns.empty()) {
      spdlog::warn("entity {}: table {} has columns the declaration does not name, left unused: {}", name,
                   entity.table, listed(changes.unused_columns));
    }
  }
}

}  // namespace

void register_db_commands(CLI::App& root, int& exit_code) {
  auto* db = root.add_subcommand("db", "Manage the embedded PostgreSQL cluster under $TIDEMARK_HOME (./.tidemark)");
  db->require_subcommand(1);

  db->add_subcommand("start", "Create (on first use) and start the embedded cluster on 127.0.0.1")->callback([&] {
    pipeline::db::Cluster cluster(pipeline::db::default_home());
    cluster.start();
    std::cout << cluster.status_text() << "\n";
    exit_code = kExitOk;
  });
  db->add_subcommand("stop", "Stop the embedded cluster (its data is kept)")->callback([&] {
    pipeline::db::Cluster cluster(pipeline::db::default_home());
    cluster.stop();
    std::cout << cluster.status_text() << "\n";
    exit_code = kExitOk;
  });
  db->add_subcommand("status",
                     "Say whether the embedded cluster runs (exit 0 running, 1 stopped, 2 not created)")
      ->callback([&] {
        pipeline::db::Cluster cluster(pipeline::db::default_home());
        require_embedded_cluster(cluster);
        std::cout << cluster.status_text() << "\n";
        exit_code = cluster.running() ? kExitOk : kExitFailed;
      });
  db->add_subcommand("url",
                     "Print the embedded cluster's libpq URL, with its passfile (psql accepts it); starts it if "
                     "stopped, never creates it")
      ->callback([&] {
        pipeline::db::Cluster cluster(pipeline::db::default_home());
        require_embedded_cluster(cluster);
        cluster.start();
        std::cout << cluster.url() << "\n";
        exit_code = kExitOk;
      });

  auto* migrate = root.add_subcommand(
      "migrate", "Apply pending database migrations and, with --config, create or update the declared entities' "
                 "tables, then exit");
  auto options = std::make_shared<DatabaseOptions>();
  options->add_to(*migrate);
  migrate->callback([&, options] {
    const auto config = options->load_config();
    const std::string url = options->connect_url(config);
    std::cout << "migrations applied\n";
    if (config) ensure_entity_tables(*config, url);
    exit_code = kExitOk;
  });
}

}  // namespace tidemark::app
