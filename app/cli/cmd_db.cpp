#include <iostream>
#include <string>

#include "app/cli/commands.hpp"
#include "pipeline/cluster/cluster.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::app {

void register_db_commands(CLI::App& root, int& exit_code) {
  auto* db = root.add_subcommand("db", "Manage the embedded PostgreSQL cluster under $TIDEMARK_HOME (./.tidemark)");
  db->require_subcommand(1);

  db->add_subcommand("start", "Create (on first use) and start the embedded cluster on 127.0.0.1")->callback([&] {
    pipeline::cluster::Cluster cluster(pipeline::cluster::default_home());
    cluster.start();
    std::cout << cluster.status_text() << "\n";
    exit_code = kExitOk;
  });
  db->add_subcommand("stop", "Stop the embedded cluster (its data is kept)")->callback([&] {
    pipeline::cluster::Cluster cluster(pipeline::cluster::default_home());
    cluster.stop();
    std::cout << cluster.status_text() << "\n";
    exit_code = kExitOk;
  });
  db->add_subcommand("status",
                     "Say whether the embedded cluster runs (exit 0 running, 1 stopped, 2 not created)")
      ->callback([&] {
        pipeline::cluster::Cluster cluster(pipeline::cluster::default_home());
        require_embedded_cluster(cluster);
        std::cout << cluster.status_text() << "\n";
        exit_code = cluster.running() ? kExitOk : kExitFailed;
      });
  db->add_subcommand("url",
                     "Print the embedded cluster's libpq URL, with its passfile (psql accepts it); starts it if "
                     "stopped, never creates it")
      ->callback([&] {
        pipeline::cluster::Cluster cluster(pipeline::cluster::default_home());
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
    const auto connection = options->connect(config);
    std::cout << "migrations applied\n";
    if (config) ensure_entity_tables(*config, *connection, [](const std::string& done) { std::cout << done << "\n"; });
    exit_code = kExitOk;
  });
}

}  // namespace tidemark::app
