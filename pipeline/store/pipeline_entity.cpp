#include "pipeline/store/pipeline_entity.hpp"

#include "pipeline/store/pg/row.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline::db {

namespace {

std::string mismatch_message(const std::string& pipeline, const std::string& recorded, const std::string& entity) {
  return "pipeline " + pipeline + " loads entity '" + recorded + "' (recorded at its first run), not '" + entity +
         "': its records are not loaded, released or shown as '" + entity + "'. Pass the pipeline's --config, "
         "whose pipeline " + pipeline + " loads '" + recorded + "' (without --config a command assumes the built-in "
         "entity '" + std::string(kBuiltInEntityName) + "'). To make the pipeline load '" + entity +
         "' from now on, run `tidemark pipeline set-entity --pipeline " + pipeline + " --entity " + entity + "` first";
}

}  // namespace

std::optional<std::string> recorded_pipeline_entity(pqxx::transaction_base& txn, const std::string& pipeline) {
  const auto rows = txn.exec_params(std::string(sql::kEntityPipelineEntity), pipeline);
  if (rows.empty()) return std::nullopt;
  return Row(rows[0]).text("entity");
}

void keep_pipeline_entity(pqxx::connection& connection, const std::string& pipeline, const EntityDeclaration& entity,
                          bool record) {
  pqxx::nontransaction txn(connection);
  if (record) txn.exec_params(std::string(sql::kEntityRecordPipelineEntity), pipeline, entity.name);
  const auto recorded = recorded_pipeline_entity(txn, pipeline);
  if (recorded && *recorded != entity.name) throw PipelineEntityMismatch(mismatch_message(pipeline, *recorded, entity.name));
}

std::optional<std::string> change_pipeline_entity(pqxx::connection& connection, const std::string& pipeline,
                                                  const std::string& entity) {
  pqxx::work txn(connection);
  auto before = recorded_pipeline_entity(txn, pipeline);
  txn.exec_params(std::string(sql::kEntityChangePipelineEntity), pipeline, entity);
  txn.commit();
  return before;
}

std::optional<EntityDeclaration> recorded_entity(pqxx::transaction_base& txn, const std::string& name) {
  if (name == kBuiltInEntityName) return built_in_transaction_entity();
  if (!Row(txn.exec(std::string(sql::kEntityRegistryExists)).at(0)).get<bool>("registry_exists")) return std::nullopt;
  const auto rows = txn.exec_params(std::string(sql::kEntityRecordedDeclaration), name);
  if (rows.empty()) return std::nullopt;
  const Row declaration(rows[0]);
  EntityDeclaration entity;
  entity.name = name;
  entity.table = declaration.text("table_name");
  entity.key = declaration.text("key");
  entity.revision = declaration.text("revision");
  entity.partition_by = declaration.optional<std::string>("partition_by").value_or(entity.key);
  entity.extra_fields = extra_fields_from_string(declaration.text("extra_fields")).value_or(ExtraFields::kIgnore);
  for (const auto& row : txn.exec_params(std::string(sql::kEntityRecordedFields), name)) {
    const Row recorded(row);
    FieldSpec field;
    field.name = recorded.text("name");
    field.type = field_type_from_string(recorded.text("type")).value_or(FieldType::kText);
    field.required = recorded.optional<bool>("required").value_or(false);
    if (auto max_length = recorded.optional<std::size_t>("max_length")) field.max_length = *max_length;
    if (auto precision = recorded.optional<int>("precision")) field.precision = *precision;
    if (auto scale = recorded.optional<int>("scale")) field.scale = *scale;
    entity.fields.push_back(std::move(field));
  }
  return entity;
}

}  // namespace tidemark::pipeline::db
