#include <pwd.h>
#include <unistd.h>

#include <iostream>

#include <boost/json.hpp>

#include "app/cli/commands.hpp"
#include "app/cli/number_check.hpp"
#include "app/wiring/registry.hpp"
#include "pipeline/store/pg/database.hpp"
#include "pipeline/store/pg/row.hpp"
#include "pipeline/run/quarantine_release.hpp"
#include "pipeline/store/entity_schema.hpp"
#include "pipeline/store/pipeline_entity.hpp"
#include "sql/statements.hpp"

namespace tidemark::app {

namespace {

struct QuarantineOptions {
  DatabaseOptions database;
  std::string pipeline;
  int limit = 100;
  bool all = false;
  std::int64_t id = 0;
};

// A row of `quarantine list` (sql/cli/quarantine_list.sql), as it prints: text, "" for NULL.
struct QuarantineListRow {
  std::string id, pipeline, reason, key, revision, position, detail, released_as;

  static QuarantineListRow read(const pipeline::db::Row& row) {
    return {row.text("id"), row.text("pipeline"), row.text("reason"), row.text("key"),
            row.text("revision"), row.text("position"), row.text("detail"), row.text("released_as")};
  }
};

std::string current_user() {
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0') return user;
  if (const passwd* entry = getpwuid(geteuid())) return entry->pw_name;
  return "uid " + std::to_string(geteuid());
}

// Entity `name` as its table was last brought up to date (tidemark_entities), else as `config`
// declares it (its table not created yet). nullptr when neither knows it.
const pipeline::EntityDeclaration* find_entity(pqxx::transaction_base& txn, const std::optional<app::config::Config>& config,
                                               const std::string& name,
                                               std::optional<pipeline::EntityDeclaration>& recorded) {
  recorded = pipeline::db::recorded_entity(txn, name);
  if (recorded) return &*recorded;
  return config ? config->find_entity(name) : nullptr;
}

// The entity table's current row for the entry's key, below the entry: what a conflict
// conflicts with, and what a release would compete against.
void print_stored_row(pqxx::transaction_base& txn, const std::optional<app::config::Config>& config,
                      const pqxx::row& entry) {
  const std::string entity_name = entry["entity"].c_str();
  if (entry["key"].is_null()) {
    std::cout << "stored row: - (the record has no valid key)\n";
    return;
  }
  const std::string key = entry["key"].c_str();
  std::optional<pipeline::EntityDeclaration> recorded;
  const pipeline::EntityDeclaration* entity = find_entity(txn, config, entity_name, recorded);
  if (entity == nullptr) {
    std::cout << "stored row: - (entity " << entity_name << " has no table recorded and is not declared in "
              << (config ? "the config" : "the built-ins; pass the pipeline's --config") << ")\n";
    return;
  }
  const auto stored = pipeline::stored_row(txn, *entity, key);
  if (!stored.json) {
    std::cout << "stored row: none (" << stored.table << " stores no row for key " << key << ")\n";
    return;
  }
  std::cout << "stored row (" << stored.table << "):\n";
  const boost::json::value row = boost::json::parse(*stored.json);
  for (const auto& column : row.as_object()) {
    const auto& value = column.value();
    std::cout << "  " << column.key() << ": "
              << (value.is_string() ? std::string(value.as_string())
                                    : value.is_null() ? std::string() : boost::json::serialize(value))
              << "\n";
  }
}

}  // namespace

void register_quarantine_commands(CLI::App& root, int& exit_code) {
  auto* quarantine = root.add_subcommand("quarantine", "Review and release quarantined (invalid or conflicting) records");
  quarantine->require_subcommand(1);
  auto options = std::make_shared<QuarantineOptions>();

  auto* list = quarantine->add_subcommand("list", "List quarantined records, oldest first (unreleased only by default)");
  options->database.add_to(*list);
  list->add_option("--pipeline", options->pipeline, "Only this pipeline's records");
  list->add_option("--limit", options->limit, "At most this many rows (default 100)")->check(whole_number());
  list->add_flag("--all", options->all, "Include released records");
  list->callback([&, options] {
    auto connection = options->database.connect_existing(options->database.load_config());
    pqxx::nontransaction txn(*connection);
    const auto rows = txn.exec_params(
        std::string(sql::kCliQuarantineList),
        options->pipeline, options->all, options->limit);
    // `key` and `revision` whatever the entity: a listing may hold several entities' entries.
    std::cout << "id\tpipeline\treason\tkey\trevision\tposition\tdetail"
              << (options->all ? "\treleased_as" : "") << "\n";
    for (const QuarantineListRow& entry : pipeline::db::read_all<QuarantineListRow>(rows)) {
      std::cout << entry.id << "\t" << entry.pipeline << "\t" << entry.reason << "\t" << entry.key << "\t"
                << entry.revision << "\t" << entry.position << "\t" << entry.detail;
      if (options->all) std::cout << "\t" << entry.released_as;
      std::cout << "\n";
    }
    std::cerr << rows.size() << " record(s)\n";
    exit_code = kExitOk;
  });

  auto* show = quarantine->add_subcommand("show", "Show one quarantined record, with its raw text as received, and the row its entity's table\n"
      "stores for its key (read by the declaration recorded with the table; no --config needed)");
  options->database.add_to(*show);
  show->add_option("ID", options->id, "Quarantine entry id (from `quarantine list`)")->required();
  show->callback([&, options] {
    const auto config = options->database.load_config();
    auto connection = options->database.connect_existing(config);
    pqxx::nontransaction txn(*connection);
    const auto rows = txn.exec_params(
        std::string(sql::kCliQuarantineShow),
        options->id);
    if (rows.empty()) throw UsageError("quarantine entry " + std::to_string(options->id) + " does not exist");
    for (const auto& field : rows[0]) {
      std::cout << field.name() << ": " << (field.is_null() ? "" : field.c_str()) << "\n";
    }
    print_stored_row(txn, config, rows[0]);
    exit_code = kExitOk;
  });

  auto* release = quarantine->add_subcommand(
      "release",
      "Validate a quarantined record again and send it through the normal plan and commit path; it is\n"
      "accepted, or quarantined again with its new reason. Pass the pipeline's --config so that an accepted\n"
      "record writes outbox rows for its destinations.");
  options->database.add_to(*release);
  release->add_option("ID", options->id, "Quarantine entry id")->required();
  release->callback([&, options] {
    const auto config = options->database.load_config();
    // One attempt on each connection, as every command reports the first failure.
    pipeline::db::Database database(options->database.connect_url(config));
    std::vector<std::string> destinations;
    // The entity of the entry's pipeline, validated by its current declaration; without the
    // config, or for a pipeline it no longer has, the built-in one.
    const pipeline::EntityDeclaration* entity = &pipeline::built_in_transaction_entity();
    if (config) {
      database.attempt([&](pqxx::connection& connection) {
        pqxx::nontransaction txn(connection);
        const auto rows = txn.exec_params(std::string(sql::kCliQuarantinePipeline), options->id);
        if (rows.empty()) return;
        const std::string pipeline_name = pipeline::db::Row(rows[0]).text("pipeline");
        destinations = config->destination_names(pipeline_name);
        if (config->pipelines.contains(pipeline_name)) entity = &config->entity_of(pipeline_name);
      });
    }
    try {
      const auto result = pipeline::release_quarantined(database, options->id, destinations, current_user(),
                                                        quarantine_decoder(), {}, *entity);
      std::cout << "quarantine entry " << options->id << " released in run " << result.run_id << ": "
                << pipeline::to_string(result.outcome) << "\n";
    } catch (const pipeline::ReleaseEntityMismatch& error) {
      throw UsageError(std::string(error.what()) +
                       (config ? "" : " (without --config, every pipeline loads the built-in entity 'transaction')"));
    } catch (const pipeline::PipelineBusy&) {
      throw;  // another run holds the pipeline: the world's state, not the user's mistake (exit 1)
    } catch (const Error& error) {
      // Released already, or a table that cannot hold the entity: the user must pick another
      // entry or change the config (exit 2).
      if (error.kind() == ErrorKind::kConflict) throw UsageError(error.what());
      throw;
    }
    exit_code = kExitOk;
  });
}

}  // namespace tidemark::app
