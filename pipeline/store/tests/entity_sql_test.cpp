// The pieces of the generated entity SQL that need no database (pipeline/store/entity_sql.*):
// quoting, each field type's column and config spelling, the stage's COPY columns.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline/store/entity_sql.hpp"
#include "tests/support/entity_fixtures.hpp"

namespace tidemark::pipeline::db {
namespace {

TEST(EntitySql, QuotingDoublesTheQuoteCharacter) {
  EXPECT_EQ(quote_identifier("orders"), "\"orders\"");
  EXPECT_EQ(quote_identifier("a\"b"), "\"a\"\"b\"");
  EXPECT_EQ(quote_literal("it's"), "'it''s'");
}

TEST(EntitySql, EachFieldTypeHasItsColumnTypeAndItsConfigSpelling) {
  const std::vector<std::pair<FieldSpec, std::pair<std::string, std::string>>> cases = {
      {{.type = FieldType::kText}, {"text", "text"}},
      {{.type = FieldType::kInteger}, {"bigint", "integer"}},
      {{.type = FieldType::kDecimal, .precision = 14, .scale = 4}, {"numeric(14,4)", "decimal(14,4)"}},
      {{.type = FieldType::kTimestamp}, {"timestamp with time zone", "timestamp"}},
      {{.type = FieldType::kDate}, {"date", "date"}},
      {{.type = FieldType::kBoolean}, {"boolean", "boolean"}},
      {{.type = FieldType::kJson}, {"jsonb", "json"}},
  };
  for (const auto& [spec, expected] : cases) {
    EXPECT_EQ(column_type(spec), expected.first);
    EXPECT_EQ(config_type(spec), expected.second);
  }
}

TEST(EntitySql, TheStageTakesOrdKeyRevisionFieldsExtraAndCandidateInThatOrder) {
  const EntityDeclaration entity = testing::declare_entity(
      "orders", {{.name = "ord", .type = FieldType::kText}, {.name = "candidate", .type = FieldType::kBoolean}},
      {.extra_fields = ExtraFields::kKeep});
  const auto sql = build_entity_sql(entity);
  EXPECT_EQ(sql.stage_table, "tidemark_stage_orders");
  // Fields named like the stage's own columns do not collide with them.
  EXPECT_EQ(sql.stage_columns, (std::vector<std::string>{"tidemark_ord", "order_id", "version", "ord", "candidate",
                                                          "extra", "tidemark_candidate"}));
}

TEST(EntitySql, TheTableHasTheKeyTheRevisionANullableColumnPerFieldAndTheBookkeepingColumns) {
  const EntityDeclaration entity = testing::declare_entity(
      "orders",
      {{.name = "amount", .type = FieldType::kDecimal, .required = true, .precision = 14, .scale = 4},
       {.name = "placed_at", .type = FieldType::kTimestamp}},
      {.extra_fields = ExtraFields::kKeep});
  const std::string ddl = build_entity_sql(entity).create_table;
  EXPECT_EQ(ddl.substr(ddl.find("CREATE")),
            "CREATE TABLE \"orders\" (\n"
            "  \"order_id\" text PRIMARY KEY,\n"
            "  \"version\" bigint NOT NULL,\n"
            "  \"amount\" numeric(14,4),\n"
            "  \"placed_at\" timestamp with time zone,\n"
            "  \"extra\" jsonb,\n"
            "  tidemark_pipeline text,\n"
            "  tidemark_updated_at timestamptz\n"
            ")\n");
}

}  // namespace
}  // namespace tidemark::pipeline::db
