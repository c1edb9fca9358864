#pragma once
// The tidemark command line: each command group lives in its own app/cmd_*.cpp and is
// registered explicitly in main.cpp, so one list shows every command.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <pqxx/connection>

#include "app/config/config.hpp"
#include "pipeline/cluster/cluster.hpp"
#include "pipeline/core/error.hpp"

namespace tidemark::app {

// Exit codes (docs/cli.md "Exit codes").
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

// Thrown for usage and configuration mistakes: main prints the message and exits 2.
struct UsageError : tidemark::Error {
  explicit UsageError(const std::string& message) : tidemark::Error(tidemark::ErrorKind::kUsage, message) {}
};

// --config FILE and --database URL, which every database command takes.
struct DatabaseOptions {
  std::string config_file;
  std::string database_url;

  void add_to(CLI::App& command);
  // The loaded config, when --config was given (ConfigError on a bad file).
  std::optional<app::config::Config> load_config() const;
  // --database > TIDEMARK_DATABASE_URL > config `database:` > the embedded default
  // (created and started on first use); then applies pending migrations. Returns the URL.
  // A malformed URL is a UsageError (exit 2); a server that refuses us fails at once.
  std::string connect_url(const std::optional<app::config::Config>& config) const;
  // The same for read-only commands, which never create a database: with none configured
  // and no embedded cluster under $TIDEMARK_HOME, a UsageError saying how to start one.
  std::string existing_url(const std::optional<app::config::Config>& config) const;
  // connect_url and existing_url, keeping the connection that applied the migrations for the
  // command's own statements (one connection per command).
  std::unique_ptr<pqxx::connection> connect(const std::optional<app::config::Config>& config) const;
  std::unique_ptr<pqxx::connection> connect_existing(const std::optional<app::config::Config>& config) const;
  // Both: the URL (for serve's components) and the connection that applied the migrations
  // (for what serve does before it starts: its entity tables).
  struct Resolved {
    std::string url;
    std::unique_ptr<pqxx::connection> connection;  // migrated
  };
  Resolved resolve(const std::optional<app::config::Config>& config, bool create_embedded) const;
  // For `check`: connects once to the database the others would use, creating, starting and
  // migrating nothing, and hands that connection to `inspect` when given (read-only checks).
  // Returns where the URL came from; UsageError when it cannot be reached.
  std::string probe(const std::optional<app::config::Config>& config,
                    const std::function<void(pqxx::connection&)>& inspect = {}) const;

 private:
  enum class Embedded { kCreate, kExisting, kAsItIs };  // the embedded cluster: create, start or leave it
  struct Location {
    std::string url;
    std::string source;  // where the URL came from, for messages
  };
  Location locate(const std::optional<app::config::Config>& config, Embedded embedded) const;
};

// UsageError unless the embedded cluster under $TIDEMARK_HOME has been created; names the
// home and `tidemark db start`.
void require_embedded_cluster(const pipeline::cluster::Cluster& cluster);

// Creates or brings up to date the table of every entity `config` declares (docs/entities.md
// "The table": `migrate --config` and `serve` at its start do, `check` never does) and tells
// `report` what it did to each ("entity orders: table orders created"). A table that cannot
// hold its declaration is a configuration error: a UsageError (exit 2) with the message.
void ensure_entity_tables(const app::config::Config& config, pqxx::connection& connection,
                          const std::function<void(const std::string& done)>& report);

// Each sets `exit_code` from its callback; errors propagate as exceptions to main, which
// maps UsageError/ConfigError to 2 and everything else to 1.
void register_db_commands(CLI::App& root, int& exit_code);          // db start|stop|status|url, migrate
void register_run_command(CLI::App& root, int& exit_code);          // run
void register_quarantine_commands(CLI::App& root, int& exit_code);  // quarantine list|show|release
void register_pipeline_commands(CLI::App& root, int& exit_code);    // pipeline set-entity
void register_relay_commands(CLI::App& root, int& exit_code);       // relay, outbox list|retry
void register_serve_command(CLI::App& root, int& exit_code);        // serve
void register_views_command(CLI::App& root, int& exit_code);        // views list|rebuild|drop|cleanup
void register_check_command(CLI::App& root, int& exit_code);        // check
void register_status_command(CLI::App& root, int& exit_code);       // status
void register_retention_command(CLI::App& root, int& exit_code);    // retention run
void register_nats_commands(CLI::App& root, int& exit_code);        // nats setup|mapping

}  // namespace tidemark::app
