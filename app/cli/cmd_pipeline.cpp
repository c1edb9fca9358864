// tidemark pipeline set-entity: the one way to change the entity a pipeline loads (docs/
// entities.md "A pipeline keeps its entity"). Its first run recorded it; every later command
// that would load, release or show its records as another entity is refused (exit 2).
#include <iostream>

#include "app/cli/commands.hpp"
#include "pipeline/store/pg/database.hpp"
#include "pipeline/store/pipeline_entity.hpp"
#include "pipeline/store/pipeline_lock.hpp"

namespace tidemark::app {

namespace {

struct PipelineOptions {
  DatabaseOptions database;
  std::string pipeline;
  std::string entity;
};

}  // namespace

void register_pipeline_commands(CLI::App& root, int& exit_code) {
  auto* group = root.add_subcommand("pipeline", "Change what the database records of a pipeline");
  group->require_subcommand(1);
  auto options = std::make_shared<PipelineOptions>();

  auto* set_entity = group->add_subcommand(
      "set-entity",
      "Make a pipeline load another entity from now on. Its first run recorded the entity it loads, and a\n"
      "command that would load, release or show its records as another one exits 2; this is the step that\n"
      "changes it on purpose. ENTITY is the built-in 'transaction' or an entity --config declares.");
  options->database.add_to(*set_entity);
  set_entity->add_option("--pipeline", options->pipeline, "Pipeline name")->required();
  set_entity->add_option("--entity", options->entity, "The entity it loads from now on")->required();
  set_entity->callback([&, options] {
    const auto config = options->database.load_config();
    const std::string& name = options->pipeline;
    const std::string& entity = options->entity;
    const bool declared = entity == pipeline::kBuiltInEntityName || (config && config->find_entity(entity) != nullptr);
    if (!declared) {
      throw UsageError("entity '" + entity + "' is not " +
                       (config ? "declared in " + options->database.config_file
                               : "the built-in one; pass the --config that declares it"));
    }
    if (config && config->pipelines.contains(name) && config->entity_of(name).name != entity) {
      throw UsageError("pipeline " + name + " loads entity '" + config->entity_of(name).name + "' in " +
                       options->database.config_file + ", not '" + entity +
                       "': change its `entity:` there too, or its next run is refused");
    }
    auto connection = options->database.connect(config);
    // Not while the pipeline runs: its run checked the entity at its start.
    pipeline::take_pipeline_lock(*connection, name);
    const auto before = pipeline::db::change_pipeline_entity(*connection, name, entity);
    pipeline::release_pipeline_lock(*connection, name);
    std::cout << "pipeline " << name << " loads entity '" << entity << "' from now on";
    if (before && *before != entity) {
      std::cout << " (it loaded '" << *before << "'; its open quarantine entries of '" << *before
                << "' are released only with a config whose pipeline loads '" << *before << "')";
    }
    std::cout << "\n";
    exit_code = kExitOk;
  });
}

}  // namespace tidemark::app
