// RecordChecker: a declared entity's generic validation (key, revision, field plan,
// extra_fields reject and keep) and the planner over its records.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline/core/entity.hpp"
#include "pipeline/core/plan.hpp"
#include "pipeline/core/quoted_value.hpp"
#include "pipeline/core/validate.hpp"
#include "tests/support/built_in_record.hpp"
#include "tests/support/entity_fixtures.hpp"

namespace tidemark::pipeline {
namespace {

EntityDeclaration orders(ExtraFields extra = ExtraFields::kIgnore) {
  return testing::declare_entity(
      "orders",
      {
          FieldSpec{.name = "amount", .type = FieldType::kDecimal, .required = true, .precision = 14, .scale = 4},
          FieldSpec{.name = "paid", .type = FieldType::kBoolean},
          FieldSpec{.name = "meta", .type = FieldType::kJson},
      },
      {.extra_fields = extra});
}

Field untyped(std::string text) { return Field{std::move(text), FieldKind::kUntyped}; }

DecodedRecord decoded(std::string key, std::string revision, std::string amount) {
  DecodedRecord record;
  record.field(kKeyField) = untyped(std::move(key));
  record.field(kRevisionField) = untyped(std::move(revision));
  record.field(2) = untyped(std::move(amount));
  return record;
}

EntityRecord accepted(const Checked& checked) {
  if (const auto* rejection = std::get_if<Rejection>(&checked)) ADD_FAILURE() << rejection->detail;
  return std::get<EntityRecord>(checked);
}

Rejection rejected(const Checked& checked) {
  EXPECT_TRUE(std::holds_alternative<Rejection>(checked));
  return std::get<Rejection>(checked);
}

TEST(RecordChecker, TheLayoutIsTheKeyTheRevisionAndTheDeclaredFieldsInOrder) {
  const RecordChecker checker(orders());
  EXPECT_EQ(checker.layout().names, (std::vector<std::string>{"order_id", "version", "amount", "paid", "meta"}));
  EXPECT_EQ(checker.layout().required, (std::vector<bool>{true, true, true, false, false}));
  EXPECT_FALSE(checker.layout().undeclared);
  EXPECT_TRUE(RecordChecker(orders(ExtraFields::kKeep)).layout().undeclared);
  EXPECT_TRUE(RecordChecker(orders(ExtraFields::kReject)).layout().undeclared);
}

TEST(RecordChecker, AcceptsARecordInCanonicalForm) {
  const RecordChecker checker(orders());
  DecodedRecord record = decoded("o-1", "007", "1.5");
  record.field(3) = untyped("true");
  record.field(4) = untyped(R"({"b":1,"a":2})");
  const EntityRecord entity = accepted(checker.check(record));
  EXPECT_EQ(entity.key, "o-1");
  EXPECT_EQ(entity.revision, 7);
  EXPECT_EQ(entity.values, (std::vector<std::optional<std::string>>{"1.5000", "true", R"({"a": 2, "b": 1})"}));
  EXPECT_FALSE(entity.extra);
}

TEST(RecordChecker, KeyAndRevisionFollowTheRulesOfTransactionIdAndSourceRevisionNamingTheirFields) {
  const RecordChecker checker(orders());
  EXPECT_EQ(rejected(checker.check(decoded("", "1", "1"))).detail, "order_id: missing");
  EXPECT_EQ(rejected(checker.check(decoded("", "1", "1"))).field, "order_id");
  EXPECT_EQ(rejected(checker.check(decoded(std::string(129, 'k'), "1", "1"))).detail,
            "order_id: more than 128 characters (129) in " + quoted_value(std::string(129, 'k')));
  EXPECT_EQ(rejected(checker.check(decoded("o", "-1", "1"))).detail,
            "version: not an integer of decimal digits only in \"-1\"");
  EXPECT_EQ(rejected(checker.check(decoded("o", "9223372036854775808", "1"))).field, "version");
  EXPECT_EQ(rejected(checker.check(decoded("o", "", "1"))).detail, "version: missing");
}

TEST(RecordChecker, AFieldFaultNamesTheField) {
  const RecordChecker checker(orders());
  const Rejection amount = rejected(checker.check(decoded("o", "1", "1.23456")));
  EXPECT_EQ(amount.field, "amount");
  EXPECT_EQ(amount.detail, "amount: more than 4 fraction digits in \"1.23456\"");
  EXPECT_EQ(rejected(checker.check(decoded("o", "1", ""))).detail, "amount: missing (required)");
  DecodedRecord paid = decoded("o", "1", "1");
  paid.field(3) = Field{"true", FieldKind::kString};  // a JSON string is no boolean
  EXPECT_EQ(rejected(checker.check(paid)).detail, "paid: must be a boolean, not the string \"true\"");
  EXPECT_EQ(rejected(checker.check(paid)).field, "paid");
}

TEST(RecordChecker, ADecodeErrorIsTheDetail) {
  DecodedRecord broken;
  broken.decode_error = "csv: 3 fields, header has 4";
  const Rejection rejection = rejected(RecordChecker(orders()).check(broken));
  EXPECT_EQ(rejection.detail, "csv: 3 fields, header has 4");
  EXPECT_FALSE(rejection.field);
}

TEST(RecordChecker, RejectMakesAnyNonEmptyUndeclaredFieldInvalid) {
  const RecordChecker checker(orders(ExtraFields::kReject));
  DecodedRecord record = decoded("o", "1", "1");
  record.undeclared.emplace_back("note", Field{"", FieldKind::kString});
  accepted(checker.check(record));
  record.undeclared.emplace_back("channel", Field{"1", FieldKind::kNumber});
  const Rejection rejection = rejected(checker.check(record));
  EXPECT_EQ(rejection.detail, "channel: not a declared field (extra_fields: reject)");
  EXPECT_EQ(rejection.field, "channel");
}

TEST(RecordChecker, KeepStoresUndeclaredFieldsAsACanonicalJsonObject) {
  const RecordChecker checker(orders(ExtraFields::kKeep));
  DecodedRecord record = decoded("o", "1", "1");
  record.undeclared.emplace_back("zz", untyped("a\"b"));  // delimited text is a string
  record.undeclared.emplace_back("n", Field{"1.50", FieldKind::kNumber});
  record.undeclared.emplace_back("obj", Field{R"({"y":[true,null]})", FieldKind::kJson});
  record.undeclared.emplace_back("n", Field{"2e1", FieldKind::kNumber});  // the last one wins
  EXPECT_EQ(accepted(checker.check(record)).extra, R"({"n": 20, "zz": "a\"b", "obj": {"y": [true, null]}})");
  DecodedRecord none = decoded("o", "1", "1");
  EXPECT_FALSE(accepted(checker.check(none)).extra);
}

// The built-in entity is one more declaration: its amount is a required decimal(12,2), and
// its optional fields take an empty JSON string as absent, which a declared text field does not.
TEST(RecordChecker, TheBuiltInEntityIsCheckedByItsDeclarationAndTakesEmptyStringsAsAbsent) {
  const RecordChecker checker(built_in_transaction_entity());
  DecodedRecord record = decoded("t-1", "2", "");
  EXPECT_EQ(rejected(checker.check(record)).detail, "amount: missing (required)");
  record.field(built_in_field::kAmount) = untyped("-0.5");
  record.field(built_in_field::kAccountId) = Field{"", FieldKind::kString};
  record.field(built_in_field::kOccurredAt) = untyped("2024-05-01T10:00:00+02:00");
  const EntityRecord entity = accepted(checker.check(record));
  EXPECT_EQ(entity.values, (std::vector<std::optional<std::string>>{"-0.50", std::nullopt, "2024-05-01T08:00:00.000000Z"}));
  record.field(built_in_field::kOccurredAt) = Field{"", FieldKind::kString};
  EXPECT_EQ(accepted(checker.check(record)).values[2], std::nullopt);
  // A declared field keeps an empty JSON string as a value (here a json one: the string "").
  const RecordChecker declared(orders(ExtraFields::kIgnore));
  DecodedRecord order = decoded("o", "1", "1");
  order.field(4) = Field{"", FieldKind::kString};
  EXPECT_EQ(accepted(declared.check(order)).values[2], std::optional<std::string>("\"\""));
}

TEST(RecordChecker, ThePlannerComparesDeclaredPayloadsInCanonicalForm) {
  const RecordChecker checker(orders(ExtraFields::kKeep));
  DecodedRecord spelt = decoded("o", "1", "1.5");
  DecodedRecord respelt = decoded("o", "1", "1.50");
  DecodedRecord other = decoded("p", "1", "1");
  DecodedRecord other_extra = decoded("p", "1", "1");
  other_extra.undeclared.emplace_back("note", untyped("x"));
  const std::vector<Checked> batch = {checker.check(spelt), checker.check(respelt), checker.check(other),
                                      checker.check(other_extra)};
  const BatchPlan plan = plan_batch(batch);
  ASSERT_EQ(plan.versions.size(), 1u);  // o once; p's two payloads are an in-batch conflict
  EXPECT_EQ(plan.version_of[1], plan.version_of[0]);
  EXPECT_EQ(plan.decided[2], Outcome::kConflict);
  EXPECT_EQ(plan.decided[3], Outcome::kConflict);
  EXPECT_EQ(resolve_outcomes(plan, {Outcome::kInserted}),
            (std::vector<Outcome>{Outcome::kInserted, Outcome::kDuplicate, Outcome::kConflict, Outcome::kConflict}));
}

}  // namespace
}  // namespace tidemark::pipeline
