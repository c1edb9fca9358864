// Which changes of a declared field's column lose nothing (pipeline/store/entity_sql.* column_change,
// docs/entities.md "Schema changes"): those a run makes itself, and for every other the
// statement a user could run by hand and why Tidemark does not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline/store/entity_sql.hpp"

namespace tidemark::pipeline::db {
namespace {

EntityColumn declared(const FieldSpec& spec) {
  FieldSpec named = spec;
  named.name = "weight_kg";
  return {named.name, column_type(named), config_type(named)};
}

FieldSpec decimal(int precision, int scale) {
  return {.type = FieldType::kDecimal, .precision = precision, .scale = scale};
}

struct Case {
  std::string is;  // the column's type, as format_type spells it
  FieldSpec says;
  bool automatic;
  std::string statement;
  std::string reason;  // a part of it
};

void expect_change(const Case& c) {
  SCOPED_TRACE(c.is + " -> " + column_type(c.says));
  const auto change = column_change("shipments", declared(c.says), c.is);
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->automatic, c.automatic);
  EXPECT_EQ(change->statement, c.statement);
  EXPECT_NE(change->reason.find(c.reason), std::string::npos) << change->reason;
}

TEST(EntityColumnChange, TheDeclaredTypeAlreadyIsNoChange) {
  EXPECT_FALSE(column_change("shipments", declared(decimal(8, 3)), "numeric(8,3)").has_value());
  EXPECT_FALSE(column_change("shipments", declared({.type = FieldType::kText, .max_length = 10}), "text"));
  EXPECT_FALSE(column_change("shipments", declared({.type = FieldType::kInteger}), "bigint"));
}

TEST(EntityColumnChange, ChangesThatKeepEveryStoredValueAreAutomatic) {
  const std::string alter = R"(ALTER TABLE "shipments" ALTER COLUMN "weight_kg" TYPE )";
  for (const auto& c : std::vector<Case>{
           {"numeric(8,3)", decimal(10, 3), true, alter + "numeric(10,3)", "more digits, the same scale"},
           {"numeric(8,3)", decimal(10, 4), true, alter + "numeric(10,4)", "with zeros appended"},
           {"numeric(8,3)", decimal(9, 4), true, alter + "numeric(9,4)", "with zeros appended"},
           {"bigint", decimal(19, 0), true, alter + "numeric(19,0)", "every bigint value fits in 19 digits"},
           {"bigint", decimal(22, 3), true, alter + "numeric(22,3)", "fits"},
           {"integer", decimal(10, 0), true, alter + "numeric(10,0)", "every integer value fits"},
           {"integer", {.type = FieldType::kInteger}, true, alter + "bigint", "every integer value fits bigint"},
           {"smallint", {.type = FieldType::kInteger}, true, alter + "bigint", "fits bigint"},
           {"numeric(18,0)", {.type = FieldType::kInteger}, true, alter + "bigint", "up to 18 digits fits bigint"},
           {"character varying(64)", {.type = FieldType::kText}, true, alter + "text", "every varchar is a text"},
       }) {
    expect_change(c);
  }
}

TEST(EntityColumnChange, EveryOtherChangeIsRefusedWithTheStatementToRunByHandAndWhy) {
  const std::string alter = R"(ALTER TABLE "shipments" ALTER COLUMN "weight_kg" TYPE )";
  for (const auto& c : std::vector<Case>{
           // narrowing: a value that does not fit fails the statement
           {"numeric(10,3)", decimal(8, 3), false, alter + "numeric(8,3)",
            "fewer digits before the point (5, was 7): a stored value with more would make it fail"},
           // a larger scale with fewer digits before the point is narrowing too
           {"numeric(8,3)", decimal(8, 4), false, alter + "numeric(8,4)", "fewer digits before the point (4, was 5)"},
           // a smaller scale rounds
           {"numeric(8,3)", decimal(10, 2), false, alter + "numeric(10,2)",
            "fewer digits after the point (2, was 3): PostgreSQL would round every stored value to 2 digits"},
           {"numeric", decimal(38, 4), false, alter + "numeric(38,4)", "would round stored values"},
           {"bigint", decimal(18, 0), false, alter + "numeric(18,0)",
            "an integer of up to 19 digits into 18 digits before the point"},
           {"bigint", decimal(20, 2), false, alter + "numeric(20,2)", "into 18 digits before the point"},
           {"numeric(10,2)", {.type = FieldType::kInteger}, false, alter + "bigint",
            "PostgreSQL would round every stored fraction to a whole number"},
           {"numeric(19,0)", {.type = FieldType::kInteger}, false, alter + "bigint", "beyond bigint's range"},
           // text into another type can fail, and needs the conversion spelt out
           {"text", {.type = FieldType::kInteger}, false, alter + R"(bigint USING "weight_kg"::bigint)",
            "text into integer: a stored value that is not one would make it fail"},
           {"text", decimal(10, 3), false, alter + R"(numeric(10,3) USING "weight_kg"::numeric(10,3))",
            "text into decimal(10,3)"},
           {"bigint", {.type = FieldType::kText}, false, alter + "text", "need not be the form the records carry"},
           {"timestamp without time zone", {.type = FieldType::kTimestamp}, false,
            alter + R"(timestamp with time zone USING "weight_kg"::timestamp with time zone)",
            "not a change that keeps every stored value as it is"},
           {"boolean", {.type = FieldType::kInteger}, false, alter + R"(bigint USING "weight_kg"::bigint)",
            "boolean into integer"},
       }) {
    expect_change(c);
  }
}

TEST(EntityColumnChange, TheStatementQuotesTheTableAndTheColumn) {
  const auto change = column_change("my \"table\"", {"a\"b", "numeric(10,3)", "decimal(10,3)"}, "numeric(8,3)");
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->statement, R"(ALTER TABLE "my ""table""" ALTER COLUMN "a""b" TYPE numeric(10,3))");
}

}  // namespace
}  // namespace tidemark::pipeline::db
