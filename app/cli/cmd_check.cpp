// tidemark check --config FILE [--offline] [--database URL]: every error of a configuration
// at once, each with its file and line, before a run or serve meets the first of them.
#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "app/cli/commands.hpp"
#include "app/wiring/registry.hpp"
#include "pipeline/core/view_declaration.hpp"
#include "pipeline/store/entity_schema.hpp"
#include "pipeline/views/registry.hpp"

namespace tidemark::app {

namespace {

struct CheckOptions {
  DatabaseOptions database;
  bool offline = false;
};

struct Findings {
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  std::vector<std::string> notes;  // what a run or serve will do, not a fault
};

std::string at_line(const std::string& file, const app::config::DestinationConfig& destination) {
  return file + ":" + std::to_string(destination.line) + ": ";
}

// Every destination of the config, in the file's order.
std::vector<app::config::DestinationConfig> destinations_by_line(const app::config::Config& config) {
  std::vector<app::config::DestinationConfig> destinations;
  for (const auto& [name, destination] : config.destinations()) destinations.push_back(destination);
  std::sort(destinations.begin(), destinations.end(), [](const auto& a, const auto& b) { return a.line < b.line; });
  return destinations;
}

// What the config's parsing cannot see: the environment the relay will read its secrets
// from, and which views Tidemark ships. The same checks as the relay's and serve's start-up
// (each destination kind's in app/wiring/registry), with the line of the destination.
void check_destinations(const app::config::Config& config, const std::string& file, Findings& findings) {
  for (const auto& destination : destinations_by_line(config)) {
    for (const auto& error : destination_check(destination)(destination, config)) {
      findings.errors.push_back(at_line(file, destination) + error);
    }
  }
}

// What each source reads from the environment when a run opens it (a postgres source's URL).
void check_sources(const app::config::Config& config, Findings& findings) {
  for (const auto& [name, pipeline] : config.pipelines) {
    for (auto& error : source_check(pipeline.source)(pipeline.source)) findings.errors.push_back(std::move(error));
  }
}

// A view that can start a new version from a snapshot of transaction_state (docs/views.md)
// does so only when every pipeline that writes that state lists it; otherwise `views rebuild`
// replays the outbox's history, which retention may have shortened. Not an error: a view
// reflects the pipelines that list it, by choice.
void check_snapshot_views(const app::config::Config& config, const std::string& file, Findings& findings) {
  std::vector<std::string> writers;
  for (const auto& [name, pipeline] : config.pipelines) {
    if (pipeline.entity == pipeline::kBuiltInEntityName) writers.push_back(name);
  }
  for (const auto& destination : destinations_by_line(config)) {
    const std::string& name = destination.name;
    const auto* view = pipeline::views::find_view(name);
    if (!destination.capabilities().view || view == nullptr || !view->snapshot_statement()) {
      continue;
    }
    const auto feeders = config.pipelines_feeding(name);
    std::string missing;
    for (const auto& writer : writers) {
      if (std::find(feeders.begin(), feeders.end(), writer) == feeders.end()) {
        missing += (missing.empty() ? "" : ", ") + writer;
      }
    }
    if (missing.empty()) continue;
    findings.warnings.push_back(
        at_line(file, destination) + "view destination '" + name + "' is not listed by pipeline(s) " + missing +
        ", which also write the transaction entity: the view will not reflect them, and `tidemark views rebuild " +
        name + "` cannot start from a snapshot of transaction_state (it replays the outbox instead); list it in " +
        "every such pipeline if it should reflect them all");
  }
}

// Declared views are parsed and checked, but nothing builds or feeds them yet (issue 46 slice
// 2 is in progress, docs/design/declared-views-wip.md): say so, so that no one takes a clean
// check for a working view. Remove once slice 2 builds them.
void check_declared_views(const app::config::Config& config, const std::string& file, Findings& findings) {
  std::vector<const pipeline::ViewDeclaration*> views;
  for (const auto& [name, view] : config.views) views.push_back(&view);
  std::sort(views.begin(), views.end(), [](const auto* a, const auto* b) { return a->lines.name < b->lines.name; });
  for (const auto* view : views) {
    const auto strategy = pipeline::choose_strategy(*view);
    findings.warnings.push_back(file + ":" + std::to_string(view->lines.name) + ": view " + view->name + " (entity " +
                                view->entity + ", strategy " + std::string(pipeline::to_string(strategy.strategy)) +
                                ") is parsed and checked, but declared views are not built yet: Tidemark keeps no " +
                                "table for it and no pipeline can feed it");
  }
}

// "FILE:LINE: " of the config line that declares `column` of `entity` (its field, or the key:,
// revision: or extra_fields: that names it), else of the entity itself.
std::string declared_at(const std::string& file, const pipeline::EntityDeclaration& entity, const std::string& column) {
  int line = entity.lines.name;
  if (const auto* field = entity.field(column)) {
    line = field->line;
  } else if (column == entity.key) {
    line = entity.lines.key;
  } else if (column == entity.revision) {
    line = entity.lines.revision;
  } else if (column == pipeline::kExtraColumn) {
    line = entity.lines.extra_fields;
  }
  return file + ":" + std::to_string(line) + ": ";
}

// Each declared entity against its table as the database has it, read-only: the comparison
// that `run`, `serve` and `migrate --config` make before they create or extend the table;
// each problem at the line that declares its column.
void check_entity_tables(pqxx::connection& connection, const app::config::Config& config, const std::string& file,
                         Findings& findings) {
  for (const auto& [name, entity] : config.entities) {
    const std::string prefix = file + ": entity " + name + ": ";
    try {
      const auto table = pipeline::db::check_entity_table(connection, entity);
      for (const auto& problem : table.problems) {
        findings.errors.push_back(declared_at(file, entity, problem.column) + "entity " + name + ": " +
                                  problem.message);
      }
      for (const auto& altered : table.altered_columns) {
        findings.notes.push_back(declared_at(file, entity, altered.column) + "entity " + name +
                                 ": table " + entity.table + ", column " + altered.column + " is " + altered.from +
                                 "; the next run (or `tidemark migrate --config`) widens it to " + altered.to + " (" +
                                 altered.reason + ")");
      }
      if (!table.exists) {
        findings.notes.push_back(prefix + "table " + entity.table +
                                 " does not exist yet; the first run (or `tidemark migrate --config`) creates it");
      } else if (table.problems.empty() && !table.added_columns.empty()) {
        std::string columns;
        for (const auto& column : table.added_columns) columns += (columns.empty() ? "" : ", ") + column;
        findings.notes.push_back(prefix + "table " + entity.table + " lacks column(s) " + columns +
                                 "; the next run (or `tidemark migrate --config`) adds them");
      }
    } catch (const std::exception& error) {
      findings.errors.push_back(prefix + "cannot read table " + entity.table + ": " + error.what());
    }
  }
}

}  // namespace

void register_check_command(CLI::App& root, int& exit_code) {
  auto options = std::make_shared<CheckOptions>();
  auto* check = root.add_subcommand(
      "check",
      "Check a configuration and report every error at once, each with its file and line: the file itself\n"
      "(keys, values, ${VAR} interpolation, cron expressions), every *_env variable set, the view\n"
      "destinations, and that the database is reachable and each declared entity's table matches its\n"
      "declaration (unless --offline). Creates, starts, migrates and alters nothing. Exit 0 when there is\n"
      "no error (warnings and notes are printed), 2 with every error on stderr.");
  options->database.add_to(*check);
  check->get_option("--config")->required();
  check->add_flag("--offline", options->offline, "Do not connect to the database");
  check->callback([&, options] {
    const std::string& file = options->database.config_file;
    Findings findings;
    auto parsed = app::config::check_config_file(file);
    findings.errors = std::move(parsed.errors);
    check_destinations(parsed.config, file, findings);
    check_snapshot_views(parsed.config, file, findings);
    check_declared_views(parsed.config, file, findings);
    check_sources(parsed.config, findings);
    std::string database = "not checked (--offline)";
    if (!options->offline) {
      try {
        database = "reachable (" +
                   options->database.probe(parsed.config,
                                           [&](pqxx::connection& connection) {
                                             check_entity_tables(connection, parsed.config, file, findings);
                                           }) +
                   ")";
      } catch (const UsageError& error) {
        findings.errors.push_back(error.what());
        database = "unreachable";
      }
    }
    for (const auto& note : findings.notes) std::cerr << "note: " << note << "\n";
    for (const auto& warning : findings.warnings) std::cerr << "warning: " << warning << "\n";
    for (const auto& error : findings.errors) std::cerr << "error: " << error << "\n";
    std::cout << file << ": " << findings.errors.size() << " error(s), " << findings.warnings.size()
              << " warning(s); " << parsed.config.pipelines.size() << " pipeline(s); database " << database << "\n";
    exit_code = findings.errors.empty() ? kExitOk : kExitUsage;
  });
}

}  // namespace tidemark::app
