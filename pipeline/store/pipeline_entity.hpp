#pragma once
// A pipeline keeps its entity (docs/entities.md "A pipeline keeps its entity"): its first run
// records the entity it loads in tidemark_pipeline_entities, and a command that would load or
// release its records as another entity is refused instead (a run without --config assumes
// the built-in `transaction`, which would load or reject another entity's records as
// transactions). `tidemark pipeline set-entity` changes it on purpose.
#include <optional>
#include <string>

#include <pqxx/pqxx>

#include "pipeline/core/entity.hpp"
#include "pipeline/store/entity_schema.hpp"

namespace tidemark::pipeline::db {

// The pipeline loads another entity than the command would: a configuration error (exit 2,
// 409 in the API). The message names both and says that the pipeline's --config is needed.
struct PipelineEntityMismatch : EntitySchemaError {
  using EntitySchemaError::EntitySchemaError;
};

// The entity the pipeline loads, as recorded; nullopt when none is (it has not run since
// pipelines record their entity).
std::optional<std::string> recorded_pipeline_entity(pqxx::transaction_base& txn, const std::string& pipeline);

// PipelineEntityMismatch unless `entity` is the one the pipeline loads (or none is recorded).
// With `record` (a run that writes), a pipeline with none recorded records `entity`.
void keep_pipeline_entity(pqxx::connection& connection, const std::string& pipeline, const EntityDeclaration& entity,
                          bool record);

// The pipeline loads `entity` from now on, whatever it loaded before (returned; nullopt when
// none was recorded). The caller holds the pipeline's lock.
std::optional<std::string> change_pipeline_entity(pqxx::connection& connection, const std::string& pipeline,
                                                  const std::string& entity);

// Entity `name`'s declaration as its table was last brought up to date (tidemark_entities),
// the built-in one for its name; nullopt when none is recorded. What reading commands use for
// an entity the config does not declare, or without a config.
std::optional<EntityDeclaration> recorded_entity(pqxx::transaction_base& txn, const std::string& name);

}  // namespace tidemark::pipeline::db
