#include "pipeline/store/pipeline_entity.hpp"

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
  return rows[0][0].c_str();
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
  if (!txn.exec(std::string(sql::kEntityRegistryExists))[0][0].as<bool>()) return std::nullopt;
  const auto rows = txn.exec_params(std::string(sql::kEntityRecordedDeclaration), name);
  if (rows.empty()) return std::nullopt;
  EntityDeclaration entity;
  entity.name = name;
  entity.table = rows[0][0].c_str();
  entity.key = rows[0][1].c_str();
  entity.revision = rows[0][2].c_str();
  entity.partition_by = rows[0][3].is_null() ? entity.key : rows[0][3].c_str();
  entity.extra_fields = extra_fields_from_string(rows[0][4].is_null() ? "" : rows[0][4].c_str())
                            .value_or(ExtraFields::kIgnore);
  for (const auto& row : txn.exec_params(std::string(sql::kEntityRecordedFields), name)) {
    FieldSpec field;
    field.name = row[0].c_str();
    field.type = field_type_from_string(row[1].c_str()).value_or(FieldType::kText);
    field.required = !row[2].is_null() && row[2].as<bool>();
    if (!row[3].is_null()) field.max_length = row[3].as<std::size_t>();
    if (!row[4].is_null()) field.precision = row[4].as<int>();
    if (!row[5].is_null()) field.scale = row[5].as<int>();
    entity.fields.push_back(std::move(field));
  }
  return entity;
}

}  // namespace tidemark::pipeline::db
