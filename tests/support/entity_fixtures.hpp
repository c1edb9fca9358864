#pragma once
// Entity declarations for tests, built the one way: a name (also the table), the fields, and
// the key, revision, partition and extra_fields when they differ from the usual orders shape.
// Header-only: unit_tests does not link tidemark_test_support, and this needs nothing of it.
#include <string>
#include <utility>
#include <vector>

#include "pipeline/core/entity.hpp"

namespace tidemark::testing {

struct EntityShape {
  std::string key = "order_id";
  std::string revision = "version";
  std::string partition_by;  // the key when empty
  pipeline::ExtraFields extra_fields = pipeline::ExtraFields::kIgnore;
};

inline pipeline::EntityDeclaration declare_entity(std::string name, std::vector<pipeline::FieldSpec> fields,
                                                  EntityShape shape = {}) {
  pipeline::EntityDeclaration entity;
  entity.name = name;
  entity.table = std::move(name);
  entity.key = shape.key;
  entity.revision = std::move(shape.revision);
  entity.partition_by = shape.partition_by.empty() ? std::move(shape.key) : std::move(shape.partition_by);
  entity.extra_fields = shape.extra_fields;
  entity.fields = std::move(fields);
  return entity;
}

}  // namespace tidemark::testing
