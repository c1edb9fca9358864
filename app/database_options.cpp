#include <cstdlib>
#include <regex>

#include <spdlog/spdlog.h>

#include "app/commands.hpp"
#include "pipeline/db/cluster.hpp"
#include "pipeline/db/database.hpp"

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

std::string DatabaseOptions::connect_url(const std::optional<pipeline::Config>& config) const {
  std::string url = database_url;
  if (carries_password(url)) {
    spdlog::warn("--database carries a password, which every local user can read in the process list (ps); "
                 "set TIDEMARK_DATABASE_URL instead, or keep the password in a passfile (~/.pgpass, or passfile= "
                 "in the URL)");
  }
  if (url.empty()) {
    if (const char* env = std::getenv("TIDEMARK_DATABASE_URL"); env != nullptr && *env != '\0') url = env;
  }
  if (url.empty() && config && config->database) url = *config->database;
  if (url.empty()) {
    pipeline::db::Cluster cluster(pipeline::db::default_home());
    cluster.start();
    url = cluster.url();
  }
  pipeline::db::with_retries({}, "connecting to the database to apply migrations", [&] {
    auto connection = pipeline::db::connect(url);
    pipeline::db::migrate(*connection);
  });
  return url;
}

}  // namespace tidemark::app
