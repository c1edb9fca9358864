#include <cstdlib>
#include <regex>

#include <spdlog/spdlog.h>

#include "app/cli/commands.hpp"
#include "pipeline/store/cluster.hpp"
#include "pipeline/store/migrate.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::app {

namespace {

// A password in the URL (user:password@, or ?password=) or key=value string (password=)
// itself, rather than in a passfile.
bool carries_password(const std::string& conninfo) {
  static const std::regex kUrl(R"(^postgres(ql)?://[^/?#]*:[^/?#@]*@.*)");
  static const std::regex kParameter(R"((^|[?&\s])password\s*=\s*[^&\s])");
  return std::regex_search(conninfo, kUrl) || std::regex_search(conninfo, kParameter);
}

}  // namespace

void DatabaseOptions::add_to(CLI::App& command) {
  command.add_option("--config", config_file, "YAML configuration file (see docs/configuration.md)");
  command.add_option("--database", database_url,
                     "PostgreSQL URL; default: $TIDEMARK_DATABASE_URL, the config's database:, or the embedded "
                     "cluster under $TIDEMARK_HOME (./.tidemark)");
}

std::optional<pipeline::Config> DatabaseOptions::load_config() const {
  if (config_file.empty()) return std::nullopt;
  return pipeline::load_config(config_file);
}

void require_embedded_cluster(const pipeline::db::Cluster& cluster) {
  if (cluster.initialized()) return;
  throw UsageError("no database configured and no embedded cluster under $TIDEMARK_HOME (" + cluster.home().string() +
                   "): start one with `tidemark db start` (same TIDEMARK_HOME), or name a database with "
                   "--database, TIDEMARK_DATABASE_URL or the config's database:");
}

std::string DatabaseOptions::resolve(const std::optional<pipeline::Config>& config, bool create_embedded) const {
  std::string url = database_url;
  std::string source = "--database";
  if (carries_password(url)) {
    spdlog::warn("--database carries a password, which every local user can read in the process list (ps); "
                 "set TIDEMARK_DATABASE_URL instead, or keep the password in a passfile (~/.pgpass, or passfile= "
                 "in the URL)");
  }
  if (url.empty()) {
    if (const char* env = std::getenv("TIDEMARK_DATABASE_URL"); env != nullptr && *env != '\0') url = env;
    source = "TIDEMARK_DATABASE_URL";
  }
  if (url.empty() && config && config->database) {
    url = *config->database;
    source = "database: in " + config_file;
  }
  if (url.empty()) {
    pipeline::db::Cluster cluster(pipeline::db::default_home());
    if (!create_embedded) require_embedded_cluster(cluster);
    cluster.start();
    url = cluster.url();
    source = "the embedded cluster under " + cluster.home().string();
  }
  try {
    pipeline::db::with_retries({}, "connecting to the database to apply migrations", [&] {
      auto connection = pipeline::db::connect(url);
      pipeline::db::migrate(*connection);
    });
  } catch (const pipeline::db::InvalidDatabaseUrl& error) {
    throw UsageError("the database URL from " + source + " is malformed: " + error.what() +
                     " (expected postgresql://USER@HOST:PORT/DATABASE or key=value pairs, see libpq)");
  }
  return url;
}

std::string DatabaseOptions::connect_url(const std::optional<pipeline::Config>& config) const {
  return resolve(config, /*create_embedded=*/true);
}

std::string DatabaseOptions::existing_url(const std::optional<pipeline::Config>& config) const {
  return resolve(config, /*create_embedded=*/false);
}

}  // namespace tidemark::app
