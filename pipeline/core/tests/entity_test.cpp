#include "pipeline/core/entity.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "sql/statements.hpp"

namespace tidemark::pipeline {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

// The documented example's declaration (docs/entities.md), the way the config builds it.
EntityDeclaration orders() {
  return EntityDeclaration{
      .name = "orders",
      .table = "orders",
      .key = "order_id",
      .revision = "version",
      .partition_by = "customer_id",
      .fields =
          {
              FieldSpec{.name = "customer_id", .type = FieldType::kText, .required = true, .max_length = 64},
              FieldSpec{.name = "amount", .type = FieldType::kDecimal, .required = true, .precision = 14, .scale = 4},
              FieldSpec{.name = "quantity", .type = FieldType::kInteger},
              FieldSpec{.name = "placed_at", .type = FieldType::kTimestamp},
              FieldSpec{.name = "meta", .type = FieldType::kJson},
          },
  };
}

DeclarationError error(DeclarationPart part, std::string message, std::string field = "") {
  return DeclarationError{part, std::move(field), std::move(message)};
}

TEST(EntityNames, EntityNamesAreALowercaseLetterThenUpToFortySevenOfAZDigitsAndUnderscore) {
  for (const auto* good : {"o", "orders", "order_lines_2", "a_"})
    EXPECT_EQ(check_entity_name(good), std::nullopt) << good;
  EXPECT_EQ(check_entity_name(std::string(48, 'e')), std::nullopt);
  for (const std::string& bad : std::vector<std::string>{"", "Orders", "2orders", "_orders", "order-lines",
                                                        "order lines", "ordérs", std::string(49, 'e')}) {
    EXPECT_THAT(check_entity_name(bad), Optional(HasSubstr("entity name '" + bad + "' is not a plain name"))) << bad;
  }
}

TEST(EntityNames, IdentifiersAreUpToSixtyThreeCharactersAndNeverTidemarkPrefixed) {
  EXPECT_EQ(check_identifier("field name", "customer_id"), std::nullopt);
  EXPECT_EQ(check_identifier("field name", std::string(63, 'f')), std::nullopt);
  EXPECT_EQ(check_identifier("field name", "tidemark"), std::nullopt);  // the prefix is tidemark_
  for (const std::string& bad :
       std::vector<std::string>{"", "Amount", "1st", "amount$", "\"amount\"", std::string(64, 'f')}) {
    EXPECT_THAT(check_identifier("field name", bad),
                Optional(HasSubstr("field name '" + bad + "' is not a plain identifier")))
        << bad;
  }
  EXPECT_EQ(check_identifier("table name", "tidemark_orders"),
            "table name 'tidemark_orders' starts with tidemark_ (reserved for Tidemark's own tables and columns)");
}

// Every table a migration creates is reserved: a new migration's table fails here until it
// is listed (or, as every table added from now on must be, prefixed tidemark_).
TEST(EntityNames, EveryTableTheMigrationsCreateIsReserved) {
  const std::regex create_table(R"(CREATE TABLE (?:IF NOT EXISTS )?([a-z_0-9]+))", std::regex::icase);
  std::vector<std::string> texts{std::string(sql::kMigrateCreateSchemaMigrations)};
  for (const auto& migration : sql::kMigrations) texts.emplace_back(migration.text);
  std::vector<std::string> tables;
  for (const auto& text : texts) {
    for (std::sregex_iterator it(text.begin(), text.end(), create_table), end; it != end; ++it) {
      tables.push_back((*it)[1].str());
    }
  }
  EXPECT_GE(tables.size(), 12u);  // the parse found them: 11 listed, tidemark_destination_sequence
  for (const auto& table : tables) {
    EXPECT_TRUE(is_reserved_table_name(table)) << table;
    EXPECT_THAT(check_table_name(table), Optional(HasSubstr("'" + table + "'"))) << table;
  }
}

TEST(EntityNames, ViewVersionTablesAndTidemarkTablesAreReserved) {
  for (const auto* reserved : {"account_balance_v1", "account_balance_v12", "daily_totals_v3",
                               "daily_totals_v3_transactions", "tidemark_entities", "tidemark_anything", "outbox",
                               "transaction_state", "schema_migrations"}) {
    EXPECT_TRUE(is_reserved_table_name(reserved)) << reserved;
  }
  EXPECT_EQ(check_table_name("daily_totals_v2"), "table name 'daily_totals_v2' is reserved for Tidemark's own tables");
  for (const auto* free : {"account_balance", "account_balance_v", "account_balance_vx", "daily_totals_v2_old",
                           "daily_totals_v_transactions", "account_balance_v1_transactions", "orders", "transactions",
                           "outboxes"}) {
    EXPECT_FALSE(is_reserved_table_name(free)) << free;
    EXPECT_EQ(check_table_name(free), std::nullopt) << free;
  }
}

TEST(EntityDeclarations, TheInterfaceExampleIsValid) {
  EXPECT_EQ(check_entity(orders()), std::nullopt);
  EXPECT_EQ(check_declared_entity(orders()), std::nullopt);
  auto by_key = orders();
  by_key.partition_by = by_key.key;  // the default when partition_by is absent
  EXPECT_EQ(check_declared_entity(by_key), std::nullopt);
}

TEST(EntityDeclarations, BadNamesNameThePartAtFault) {
  auto entity = orders();
  entity.name = "Orders";
  EXPECT_EQ(check_declared_entity(entity)->part, DeclarationPart::kName);
  entity = orders();
  entity.table = "Orders";
  EXPECT_EQ(check_declared_entity(entity)->part, DeclarationPart::kTable);
  entity = orders();
  entity.key = "order id";
  entity.partition_by = "customer_id";
  EXPECT_THAT(check_declared_entity(entity),
              Optional(error(DeclarationPart::kKey, *check_identifier("key field name", "order id"))));
  entity = orders();
  entity.revision = "tidemark_revision";
  EXPECT_EQ(check_declared_entity(entity)->part, DeclarationPart::kRevision);
  entity = orders();
  entity.revision = entity.key;
  EXPECT_THAT(check_declared_entity(entity),
              Optional(error(DeclarationPart::kRevision, "'order_id' is the key field too")));
}

TEST(EntityDeclarations, ADeclaredEntityMayNotTakeTheBuiltInNameOrAReservedTable) {
  auto entity = orders();
  entity.name = "transaction";
  EXPECT_THAT(
      check_declared_entity(entity),
      Optional(::testing::Field(&DeclarationError::message, HasSubstr("'transaction' is the built-in entity"))));
  entity = orders();
  entity.table = "outbox";
  EXPECT_THAT(check_declared_entity(entity),
              Optional(error(DeclarationPart::kTable, "table name 'outbox' is reserved for Tidemark's own tables")));
  EXPECT_EQ(check_entity(entity), std::nullopt);  // a rule of declared entities only
}

TEST(EntityDeclarations, FieldsMayNotRepeatTheKeyTheRevisionOrTheColumnsTidemarkAdds) {
  const auto with_field = [](std::string name, ExtraFields extra = ExtraFields::kIgnore) {
    auto entity = orders();
    entity.extra_fields = extra;
    entity.fields.push_back(FieldSpec{.name = std::move(name), .type = FieldType::kText});
    return check_declared_entity(entity);
  };
  EXPECT_THAT(with_field("order_id"),
              Optional(error(DeclarationPart::kFieldName,
                             "'order_id' is the key field (key and revision are not listed in fields)", "order_id")));
  EXPECT_THAT(
      with_field("version"),
      Optional(error(DeclarationPart::kFieldName,
                     "'version' is the revision field (key and revision are not listed in fields)", "version")));
  EXPECT_THAT(with_field("amount"),
              Optional(error(DeclarationPart::kFieldName, "field 'amount' is declared twice", "amount")));
  for (const std::string_view bookkeeping : {kPipelineColumn, kUpdatedAtColumn}) {
    EXPECT_THAT(with_field(std::string(bookkeeping)),
                Optional(::testing::Field(&DeclarationError::message, HasSubstr("starts with tidemark_"))))
        << bookkeeping;
  }
  // `extra` is an ordinary field unless undeclared fields are kept in it.
  EXPECT_EQ(with_field("extra"), std::nullopt);
  EXPECT_EQ(with_field("extra", ExtraFields::kReject), std::nullopt);
  EXPECT_THAT(with_field("extra", ExtraFields::kKeep),
              Optional(error(DeclarationPart::kFieldName,
                             "'extra' is the column of kept undeclared fields (extra_fields: keep)", "extra")));
  auto key_named_extra = orders();
  key_named_extra.extra_fields = ExtraFields::kKeep;
  key_named_extra.key = "extra";
  key_named_extra.partition_by = "extra";
  EXPECT_EQ(check_declared_entity(key_named_extra)->part, DeclarationPart::kKey);
}

TEST(EntityDeclarations, DecimalPrecisionIsOneToThirtyEightAndScaleAtMostThePrecision) {
  const auto with_decimal = [](int precision, int scale) {
    auto entity = orders();
    entity.fields.push_back(
        FieldSpec{.name = "price", .type = FieldType::kDecimal, .precision = precision, .scale = scale});
    return check_declared_entity(entity);
  };
  EXPECT_EQ(with_decimal(1, 0), std::nullopt);
  EXPECT_EQ(with_decimal(1, 1), std::nullopt);
  EXPECT_EQ(with_decimal(38, 38), std::nullopt);
  EXPECT_EQ(with_decimal(38, 0), std::nullopt);
  EXPECT_THAT(with_decimal(0, 0),
              Optional(error(DeclarationPart::kFieldPrecision, "precision 0 is out of range (1 to 38)", "price")));
  EXPECT_THAT(with_decimal(39, 2),
              Optional(error(DeclarationPart::kFieldPrecision, "precision 39 is out of range (1 to 38)", "price")));
  EXPECT_THAT(with_decimal(10, 11), Optional(error(DeclarationPart::kFieldScale,
                                                   "scale 11 is out of range (0 to the precision, 10)", "price")));
  EXPECT_EQ(with_decimal(10, -1)->part, DeclarationPart::kFieldScale);
}

TEST(EntityDeclarations, MaxLengthIsAtLeastOneAndPrecisionOrScaleOnlyOnDecimals) {
  auto entity = orders();
  entity.fields[0].max_length = 0;
  EXPECT_THAT(check_declared_entity(entity),
              Optional(error(DeclarationPart::kFieldMaxLength, "max_length must be at least 1", "customer_id")));
  entity.fields[0].max_length = 1;
  EXPECT_EQ(check_declared_entity(entity), std::nullopt);
  entity = orders();
  entity.fields[2].precision = 5;  // quantity, an integer
  EXPECT_THAT(check_declared_entity(entity), Optional(error(DeclarationPart::kFieldPrecision,
                                                            "precision applies to decimal fields only", "quantity")));
  entity = orders();
  entity.fields[0].scale = 1;
  EXPECT_EQ(check_declared_entity(entity)->part, DeclarationPart::kFieldScale);
}

TEST(EntityDeclarations, PartitionByNamesTheKeyOrATextOrIntegerField) {
  const auto partitioned_by = [](std::string name) {
    auto entity = orders();
    entity.partition_by = std::move(name);
    return check_declared_entity(entity);
  };
  EXPECT_EQ(partitioned_by("order_id"), std::nullopt);
  EXPECT_EQ(partitioned_by("customer_id"), std::nullopt);
  EXPECT_EQ(partitioned_by("quantity"), std::nullopt);
  EXPECT_THAT(partitioned_by("amount"),
              Optional(error(DeclarationPart::kPartitionBy,
                             "'amount' is a decimal field (expected the key or a text or integer field)")));
  EXPECT_THAT(partitioned_by("placed_at"),
              Optional(::testing::Field(&DeclarationError::message, HasSubstr("is a timestamp field"))));
  EXPECT_THAT(partitioned_by("meta"),
              Optional(::testing::Field(&DeclarationError::message, HasSubstr("is a json field"))));
  EXPECT_THAT(partitioned_by("version"),
              Optional(error(DeclarationPart::kPartitionBy,
                             "'version' is the revision field (expected the key or a text or integer field)")));
  EXPECT_THAT(partitioned_by("region"),
              Optional(error(DeclarationPart::kPartitionBy,
                             "'region' is not a declared field (expected the key or a text or integer field)")));
  EXPECT_EQ(partitioned_by("")->part, DeclarationPart::kPartitionBy);
}

TEST(EntityDeclarations, TwoEntitiesMayNotShareATable) {
  std::map<std::string, EntityDeclaration> declared{{"orders", orders()}};
  auto sales = orders();
  sales.name = "sales";
  EXPECT_EQ(check_table_unused(declared, sales),
            "table 'orders' is already the table of entity 'orders' (two entities may not share a table)");
  sales.table = "sales";
  EXPECT_EQ(check_table_unused(declared, sales), std::nullopt);
  EXPECT_EQ(check_table_unused(declared, orders()), std::nullopt);  // an entity does not clash with itself
}

TEST(BuiltInEntity, IsTransactionStateAsMainHasIt) {
  const EntityDeclaration& entity = built_in_transaction_entity();
  EXPECT_EQ(entity.name, "transaction");
  EXPECT_EQ(entity.table, "transaction_state");
  EXPECT_EQ(entity.key, "transaction_id");
  EXPECT_EQ(entity.revision, "source_revision");
  EXPECT_EQ(entity.partition_by, "account_id");
  EXPECT_EQ(entity.extra_fields, ExtraFields::kIgnore);
  const std::vector<FieldSpec> fields{
      {.name = "amount", .type = FieldType::kDecimal, .required = true, .precision = 12, .scale = 2},
      // "empty means absent" for both optional fields (docs/cli.md "Input records")
      {.name = "account_id", .type = FieldType::kText, .required = false, .max_length = 128, .empty_is_absent = true},
      {.name = "occurred_at", .type = FieldType::kTimestamp, .required = false, .empty_is_absent = true},
  };
  EXPECT_EQ(entity.fields, fields);
  ASSERT_NE(entity.field("account_id"), nullptr);
  EXPECT_EQ(entity.field("account_id")->max_length, 128u);
  EXPECT_EQ(entity.field("transaction_id"), nullptr);  // the key is not a listed field
}

TEST(BuiltInEntity, KeepsEveryRuleOfAnEntityButIsNoDeclaration) {
  EXPECT_EQ(check_entity(built_in_transaction_entity()), std::nullopt);
  EXPECT_THAT(check_declared_entity(built_in_transaction_entity()),
              Optional(::testing::Field(&DeclarationError::part, DeclarationPart::kName)));
}

TEST(ExtraFieldsModes, NamesRoundTrip) {
  for (const auto& [name, mode] : kExtraFieldsModes) {
    EXPECT_EQ(to_string(mode), name);
    EXPECT_EQ(extra_fields_from_string(name), mode);
  }
  EXPECT_EQ(extra_fields_from_string("Keep"), std::nullopt);
}

}  // namespace
}  // namespace tidemark::pipeline
