#include <cstdlib>
#include <regex>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>

#include "app/cli/commands.hpp"
#include "app/cli/logging.hpp"
#include "pipeline/cluster/cluster.hpp"
#include "pipeline/store/entity_schema.hpp"
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

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

void ensure_entity_tables(const app::config::Config& config, pqxx::connection& connection,
                          const std::function<void(const std::string& done)>& report) {
  if (config.entities.empty()) return;
  for (const auto& [name, entity] : config.entities) {
    pipeline::db::EntityTableChanges changes;
    try {
      changes = pipeline::db::ensure_entity_table(connection, entity);
    } catch (const pipeline::db::EntitySchemaError& error) {
      throw UsageError(error.what());
    }
    std::string done = changes.created ? "created" : changes.adopted ? "adopted" : "up to date";
    if (!changes.added_columns.empty()) done += ", columns added: " + listed(changes.added_columns);
    std::vector<std::string> altered;
    for (const auto& column : changes.altered_columns) altered.push_back(column.column + " " + column.to);
    if (!altered.empty()) done += ", columns widened: " + listed(altered);
    report("entity " + name + ": table " + entity.table + " " + done);
    if (!changes.unused_columns.empty()) {
      spdlog::warn("entity {}: table {} has columns the declaration does not name, left unused: {}", name,
                   entity.table, listed(changes.unused_columns));
    }
  }
}

void DatabaseOptions::add_to(CLI::App& command) {
  command.add_option("--config", config_file, "YAML configuration file (see docs/configuration.md)");
  command.add_option("--database", database_url,
                     "PostgreSQL URL; default: $TIDEMARK_DATABASE_URL, the config's database:, or the embedded "
                     "cluster under $TIDEMARK_HOME (./.tidemark)");
  // A database command's --pipeline (whichever adds it, after this) follows the config's name
  // rule: a name no config can define is a usage error, not an empty listing or a new checkpoint.
  command.parse_complete_callback([&command] {
    const CLI::Option* pipeline = command.get_option_no_throw("--pipeline");
    if (pipeline == nullptr || pipeline->count() == 0) return;
    const auto name = pipeline->as<std::string>();
    if (!app::config::is_valid_name(name)) {
      throw UsageError("--pipeline '" + name + "' is not a pipeline name: pipeline names are " +
                       std::string(app::config::kNameRule) + ", as in the config");
    }
  });
}

std::optional<app::config::Config> DatabaseOptions::load_config() const {
  if (config_file.empty()) return std::nullopt;
  auto config = app::config::load_config(config_file);
  apply_log_config(config.log.level, config.log.format, config_file);
  return config;
}

void require_embedded_cluster(const pipeline::cluster::Cluster& cluster) {
  if (cluster.initialized()) return;
  throw UsageError("no database configured and no embedded cluster under $TIDEMARK_HOME (" + cluster.home().string() +
                   "): start one with `tidemark db start` (same TIDEMARK_HOME), or name a database with "
                   "--database, TIDEMARK_DATABASE_URL or the config's database:");
}

DatabaseOptions::Location DatabaseOptions::locate(const std::optional<app::config::Config>& config,
                                                  Embedded embedded) const {
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
    pipeline::cluster::Cluster cluster(pipeline::cluster::default_home());
    if (embedded != Embedded::kCreate) require_embedded_cluster(cluster);
    if (embedded == Embedded::kAsItIs && !cluster.running()) {
      throw UsageError("the embedded cluster under " + cluster.home().string() +
                       " is not running: start it with `tidemark db start` (same TIDEMARK_HOME)");
    }
    if (embedded != Embedded::kAsItIs) cluster.start();
    url = cluster.url();
    source = "the embedded cluster under " + cluster.home().string();
  }
  return {url, source};
}

namespace {

UsageError malformed_url(const std::string& source, const std::exception& error) {
  return UsageError("the database URL from " + source + " is malformed: " + error.what() +
                    " (expected postgresql://USER@HOST:PORT/DATABASE or key=value pairs, see libpq)");
}

}  // namespace

DatabaseOptions::Resolved DatabaseOptions::resolve(const std::optional<app::config::Config>& config,
                                                   bool create_embedded) const {
  auto [url, source] = locate(config, create_embedded ? Embedded::kCreate : Embedded::kExisting);
  Resolved resolved{std::move(url), nullptr};
  try {
    pipeline::db::with_retries({}, "connecting to the database to apply migrations", [&] {
      resolved.connection = pipeline::db::connect(resolved.url);
      pipeline::db::migrate(*resolved.connection);
    });
  } catch (const pipeline::db::InvalidDatabaseUrl& error) {
    throw malformed_url(source, error);
  }
  return resolved;
}

std::string DatabaseOptions::connect_url(const std::optional<app::config::Config>& config) const {
  return resolve(config, /*create_embedded=*/true).url;
}

std::string DatabaseOptions::existing_url(const std::optional<app::config::Config>& config) const {
  return resolve(config, /*create_embedded=*/false).url;
}

std::unique_ptr<pqxx::connection> DatabaseOptions::connect(const std::optional<app::config::Config>& config) const {
  return resolve(config, /*create_embedded=*/true).connection;
}

std::unique_ptr<pqxx::connection> DatabaseOptions::connect_existing(
    const std::optional<app::config::Config>& config) const {
  return resolve(config, /*create_embedded=*/false).connection;
}

std::string DatabaseOptions::probe(const std::optional<app::config::Config>& config,
                                   const std::function<void(pqxx::connection&)>& inspect) const {
  const auto [url, source] = locate(config, Embedded::kAsItIs);
  std::unique_ptr<pqxx::connection> connection;
  try {
    connection = pipeline::db::connect(url);  // once: a check reports the state it finds, it does not wait for a better one
  } catch (const pipeline::db::InvalidDatabaseUrl& error) {
    throw malformed_url(source, error);
  } catch (const std::exception& error) {
    // libpq's message spans lines ("…failed: Connection refused\n\tIs the server running…"): one line here.
    std::string message;
    for (const char c : std::string_view(error.what())) {
      const bool space = c == '\n' || c == '\t' || c == ' ';
      if (!space) message += c;
      else if (!message.empty() && message.back() != ' ') message += ' ';
    }
    while (message.ends_with(' ')) message.pop_back();
    throw UsageError("cannot connect to the database from " + source + ": " + message);
  }
  if (inspect) inspect(*connection);
  return source;
}

}  // namespace tidemark::app
