#include "pipeline/core/view_declaration.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tidemark::pipeline {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

// The design's example entity (docs/design/declared-views.md §6).
EntityDeclaration orders() {
  return EntityDeclaration{
      .name = "orders",
      .table = "orders",
      .key = "order_id",
      .revision = "version",
      .partition_by = "customer_id",
      .fields =
          {
              FieldSpec{.name = "customer_id", .type = FieldType::kText, .max_length = 64},
              FieldSpec{.name = "region", .type = FieldType::kText},
              FieldSpec{.name = "status", .type = FieldType::kText},
              FieldSpec{.name = "total", .type = FieldType::kDecimal, .precision = 14, .scale = 4},
              FieldSpec{.name = "qty", .type = FieldType::kInteger},
              FieldSpec{.name = "placed_at", .type = FieldType::kTimestamp},
              FieldSpec{.name = "due", .type = FieldType::kDate},
              FieldSpec{.name = "paid", .type = FieldType::kBoolean},
              FieldSpec{.name = "meta", .type = FieldType::kJson},
          },
  };
}

// The issue's example: paid total per customer.
ViewDeclaration paid_by_customer() {
  return ViewDeclaration{
      .name = "paid_by_customer",
      .entity = "orders",
      .group_by = {"customer_id"},
      .filters = {ViewFilter{.field = "status", .values = {"paid", "shipped"}}},
      .columns = {ViewColumn{.name = "orders", .aggregate = ViewAggregate::kCount},
                  ViewColumn{.name = "paid_total", .aggregate = ViewAggregate::kSum, .field = "total"}},
  };
}

ViewDeclarationError error(ViewPart part, std::size_t index, std::string message) {
  return ViewDeclarationError{part, index, std::move(message)};
}

// The error check_view gives for `paid_by_customer` changed by `change`.
template <typename Change>
std::optional<ViewDeclarationError> error_after(Change change) {
  ViewDeclaration view = paid_by_customer();
  change(view);
  return check_view(view, orders());
}

TEST(ViewDeclaration, TheIssuesExampleAndEveryAggregateOverFittingFieldsPass) {
  EXPECT_EQ(check_view(paid_by_customer(), orders()), std::nullopt);
  EXPECT_EQ(error_after([](ViewDeclaration& view) {
              view.group_by = {"region", "qty", "due", "paid", "order_id"};
              view.filters = {ViewFilter{.field = "qty", .op = FilterOp::kGreaterOrEqual, .values = {"1"}},
                              ViewFilter{.field = "total", .op = FilterOp::kLess, .values = {"10.5"}},
                              ViewFilter{.field = "placed_at", .op = FilterOp::kGreater, .values = {"2026-01-01T00:00:00Z"}},
                              ViewFilter{.field = "due", .op = FilterOp::kLessOrEqual, .values = {"2026-12-31"}},
                              ViewFilter{.field = "paid", .values = {"true"}},
                              ViewFilter{.field = "order_id", .values = {"o-1", "o-2"}}};
              view.columns = {ViewColumn{.name = "n", .aggregate = ViewAggregate::kCount},
                              ViewColumn{.name = "s_total", .aggregate = ViewAggregate::kSum, .field = "total"},
                              ViewColumn{.name = "s_qty", .aggregate = ViewAggregate::kSum, .field = "qty"},
                              ViewColumn{.name = "first", .aggregate = ViewAggregate::kMin, .field = "placed_at"},
                              ViewColumn{.name = "last_due", .aggregate = ViewAggregate::kMax, .field = "due"},
                              ViewColumn{.name = "hi", .aggregate = ViewAggregate::kMax, .field = "total"}};
            }),
            std::nullopt);
  EXPECT_EQ(error_after([](ViewDeclaration& view) {
              view.by_partition = true;
              view.group_by.clear();
            }),
            std::nullopt);
}

TEST(ViewDeclaration, ANameFollowsTheEntityRuleAndTakesNoShippedViewsOrTidemarksPrefix) {
  for (const std::string& bad : std::vector<std::string>{"", "Paid", "2views", "paid-by", std::string(49, 'v')}) {
    EXPECT_THAT(check_view_name(bad), Optional(HasSubstr("view name '" + bad + "' is not a plain name"))) << bad;
  }
  EXPECT_EQ(check_view_name(std::string(48, 'v')), std::nullopt);
  EXPECT_THAT(check_view_name("tidemark_views"), Optional(HasSubstr("starts with tidemark_")));
  for (const auto shipped : kShippedViewNames) {
    EXPECT_THAT(check_view_name(shipped), Optional(HasSubstr("is a view Tidemark ships"))) << shipped;
  }
  EXPECT_EQ(error_after([](ViewDeclaration& view) { view.name = "account_balance"; })->part, ViewPart::kName);
}

TEST(ViewDeclaration, GroupByTakesOneToEightDistinctTextIntegerDateBooleanFieldsOrTheKey) {
  EXPECT_EQ(error_after([](ViewDeclaration& view) { view.group_by = {"customer_id", "total"}; }),
            error(ViewPart::kGroupBy, 1,
                  "'total' is a decimal field (group by text, integer, date or boolean fields, the key order_id, or "
                  "write group_by: partition)"));
  EXPECT_EQ(error_after([](ViewDeclaration& view) { view.group_by = {"placed_at"}; })->message,
            "'placed_at' is a timestamp field (group by text, integer, date or boolean fields, the key order_id, or "
            "write group_by: partition)");
  EXPECT_THAT(error_after([](ViewDeclaration& view) { view.group_by = {"meta"}; })->message,
              HasSubstr("'meta' is a json field"));
  EXPECT_THAT(error_after([](ViewDeclaration& view) { view.group_by = {"version"}; })->message,
              HasSubstr("'version' is the revision field"));
  EXPECT_EQ(error_after([](ViewDeclaration& view) { view.group_by = {"customer"}; }),
            error(ViewPart::kGroupBy, 0,
                  "'customer' is not a declared field of entity orders (group by text, integer, date or boolean "
                  "fields, the key order_id, or write group_by: partition)"));
  EXPECT_EQ(error_after([](ViewDeclaration& view) { view.group_by = {"region", "region"}; }),
            error(ViewPart::kGroupBy, 1, "'region' is listed twice"));
  EXPECT_EQ(error_after([](ViewDeclaration& view) { view.group_by.clear(); })->index, kWholePart);
  EXPECT_EQ(error_after([](ViewDeclaration& view) {
              view.group_by = {"region", "qty", "due", "paid", "order_id", "customer_id", "status", "region"};
            }),
            error(ViewPart::kGroupBy, 7, "'region' is listed twice"));  // 8 is allowed
  EXPECT_EQ(error_after([](ViewDeclaration& view) { view.group_by = std::vector<std::string>(9, "region"); }),
            error(ViewPart::kGroupBy, kWholePart, "at most 8 fields, got 9"));
}

TEST(ViewDeclaration, EqualityOnTextIntegerDateBooleanAndComparisonOnNumbersAndTimes) {
  EXPECT_EQ(error_after([](ViewDeclaration& view) { view.filters = {ViewFilter{.field = "total", .values = {"10"}}}; }),
            error(ViewPart::kFilter, 0,
                  "compare decimal fields with <, <=, > or >= (e.g. {\">=\": \"10\"}), not for equality"));
  EXPECT_THAT(error_after([](ViewDeclaration& view) {
                view.filters = {ViewFilter{.field = "placed_at", .values = {"2026-01-01T00:00:00Z"}}};
              })->message,
              HasSubstr("compare timestamp fields with <"));
  EXPECT_EQ(error_after([](ViewDeclaration& view) {
              view.filters = {ViewFilter{.field = "status", .values = {"paid"}},
                              ViewFilter{.field = "status", .op = FilterOp::kGreater, .values = {"a"}}};
            }),
            error(ViewPart::kFilter, 1,
                  "'status' is a text field: compare it for equality (F: V or F: [V, ...]); <, <=, > and >= apply to "
                  "integer, decimal, timestamp and date fields"));
  EXPECT_THAT(error_after([](ViewDeclaration& view) {
                view.filters = {ViewFilter{.field = "paid", .op = FilterOp::kLess, .values = {"true"}}};
              })->message,
              HasSubstr("'paid' is a boolean field"));
  EXPECT_EQ(error_after([](ViewDeclaration& view) { view.filters = {ViewFilter{.field = "meta", .values = {"1"}}}; }),
            error(ViewPart::kFilter, 0, "'meta' is a json field: json fields cannot be filtered on"));
  EXPECT_THAT(error_after([](ViewDeclaration& view) { view.filters = {ViewFilter{.field = "nope", .values = {"1"}}}; })
                  ->message,
              HasSubstr("'nope' is not a declared field of entity orders (filter on declared fields or the key order_id)"));
  EXPECT_THAT(error_after([](ViewDeclaration& view) { view.filters = {ViewFilter{.field = "version", .values = {"1"}}}; })
                  ->message,
              HasSubstr("'version' is the revision field"));
}

TEST(ViewDeclaration, AFilterHoldsOneToAHundredValidValuesAndAComparisonOne) {
  EXPECT_EQ(error_after([](ViewDeclaration& view) { view.filters = {ViewFilter{.field = "status"}}; }),
            error(ViewPart::kFilter, 0, "expected at least one value"));
  EXPECT_EQ(error_after([](ViewDeclaration& view) {
              view.filters = {ViewFilter{.field = "status", .values = std::vector<std::string>(100, "paid")}};
            }),
            std::nullopt);
  EXPECT_EQ(error_after([](ViewDeclaration& view) {
              view.filters = {ViewFilter{.field = "status", .values = std::vector<std::string>(101, "paid")}};
            }),
            error(ViewPart::kFilter, 0, "at most 100 values, got 101"));
  EXPECT_EQ(error_after([](ViewDeclaration& view) {
              view.filters = {ViewFilter{.field = "qty", .op = FilterOp::kLess, .values = {"1", "2"}}};
            }),
            error(ViewPart::kFilter, 0, "< takes one value"));
  EXPECT_EQ(error_after([](ViewDeclaration& view) { view.filters = {ViewFilter{.field = "paid", .values = {"yes"}}}; }),
            error(ViewPart::kFilter, 0, "not a boolean (true or false) in \"yes\""));
  EXPECT_THAT(error_after([](ViewDeclaration& view) {
                view.filters = {ViewFilter{.field = "total", .op = FilterOp::kGreaterOrEqual, .values = {"1.23456"}}};
              })->message,
              HasSubstr("fraction digits"));
  EXPECT_EQ(error_after([](ViewDeclaration& view) { view.filters = {ViewFilter{.field = "status", .values = {""}}}; }),
            error(ViewPart::kFilter, 0, "an empty value is absent, and an absent field (NULL) never matches"));
  EXPECT_EQ(error_after([](ViewDeclaration& view) {
              view.filters = {ViewFilter{.field = "customer_id", .values = {std::string(65, 'c')}}};
            })->index,
            0u);
}

TEST(ViewDeclaration, FilterValuesAreKeptInTheirFieldsCanonicalForm) {
  ViewDeclaration view = paid_by_customer();
  view.filters = {ViewFilter{.field = "total", .op = FilterOp::kGreaterOrEqual, .values = {"10"}},
                  ViewFilter{.field = "qty", .values = {"007", "-0"}},
                  ViewFilter{.field = "placed_at", .op = FilterOp::kLess, .values = {"2026-01-01T01:00:00+01:00"}}};
  ASSERT_EQ(check_view(view, orders()), std::nullopt);
  const ViewDeclaration canonical = with_canonical_values(view, orders());
  EXPECT_EQ(canonical.filters[0].values, std::vector<std::string>{"10.0000"});
  EXPECT_EQ(canonical.filters[1].values, (std::vector<std::string>{"7", "0"}));
  EXPECT_EQ(canonical.filters[2].values, std::vector<std::string>{"2026-01-01T00:00:00.000000Z"});
  EXPECT_EQ(std::get<std::string>(canonical_filter_value(orders(), "order_id", "o'brien")), "o'brien");
}

TEST(ViewDeclaration, ColumnsAreOneToThirtyTwoIdentifiersWithAggregatesThatFitTheirFields) {
  const auto column = [](std::string name, ViewAggregate aggregate, std::string field = "") {
    return ViewColumn{.name = std::move(name), .aggregate = aggregate, .field = std::move(field)};
  };
  EXPECT_EQ(error_after([](ViewDeclaration& view) { view.columns.clear(); }),
            error(ViewPart::kColumn, kWholePart,
                  "expected at least one column (NAME: count, sum(FIELD), min(FIELD) or max(FIELD))"));
  EXPECT_EQ(error_after([&](ViewDeclaration& view) {
              view.columns.clear();
              for (int i = 0; i < 33; ++i) view.columns.push_back(column("c" + std::to_string(i), ViewAggregate::kCount));
            }),
            error(ViewPart::kColumn, kWholePart, "at most 32 columns, got 33"));
  EXPECT_EQ(error_after([&](ViewDeclaration& view) { view.columns.push_back(column("customer_id", ViewAggregate::kCount)); }),
            error(ViewPart::kColumn, 2, "'customer_id' is a group_by column"));
  EXPECT_EQ(error_after([&](ViewDeclaration& view) {
              view.by_partition = true;
              view.group_by.clear();
              view.columns.push_back(column("customer_id", ViewAggregate::kCount));
            }),
            error(ViewPart::kColumn, 2, "'customer_id' is a group_by column"));  // the partition_by's name
  EXPECT_THAT(error_after([&](ViewDeclaration& view) { view.columns.push_back(column("tidemark_rows", ViewAggregate::kCount)); })
                  ->message,
              HasSubstr("starts with tidemark_"));
  EXPECT_EQ(error_after([&](ViewDeclaration& view) { view.columns.push_back(column("orders", ViewAggregate::kCount)); }),
            error(ViewPart::kColumn, 2, "column 'orders' is declared twice"));
  EXPECT_EQ(error_after([&](ViewDeclaration& view) { view.columns.push_back(column("s", ViewAggregate::kSum, "placed_at")); }),
            error(ViewPart::kColumn, 2, "sum(placed_at): 'placed_at' is a timestamp field (sum integer or decimal fields)"));
  EXPECT_EQ(error_after([&](ViewDeclaration& view) { view.columns.push_back(column("m", ViewAggregate::kMax, "status")); }),
            error(ViewPart::kColumn, 2,
                  "max(status): 'status' is a text field (min and max apply to integer, decimal, timestamp and date "
                  "fields)"));
  EXPECT_THAT(error_after([&](ViewDeclaration& view) { view.columns.push_back(column("m", ViewAggregate::kMin, "order_id")); })
                  ->message,
              HasSubstr("'order_id' is a text field"));
  EXPECT_THAT(error_after([&](ViewDeclaration& view) { view.columns.push_back(column("m", ViewAggregate::kMin, "amount")); })
                  ->message,
              HasSubstr("min(amount): 'amount' is not a declared field of entity orders"));
}

TEST(ViewDeclaration, AggregatesAreWrittenAsCountOrAFunctionOfOneField) {
  using Parsed = std::optional<std::pair<ViewAggregate, std::string>>;
  EXPECT_EQ(parse_view_aggregate("count"), (Parsed{{ViewAggregate::kCount, ""}}));
  EXPECT_EQ(parse_view_aggregate("sum(total)"), (Parsed{{ViewAggregate::kSum, "total"}}));
  EXPECT_EQ(parse_view_aggregate("min( placed_at )"), (Parsed{{ViewAggregate::kMin, "placed_at"}}));
  EXPECT_EQ(parse_view_aggregate("max(total)"), (Parsed{{ViewAggregate::kMax, "total"}}));
  for (const auto* bad : {"", "avg(total)", "count(total)", "sum()", "sum(a, b)", "sum(total", "sum total", "Sum(total)",
                          "sum(total) ", "counts"}) {
    EXPECT_EQ(parse_view_aggregate(bad), std::nullopt) << bad;
  }
}

TEST(ViewDeclaration, TheBuiltInEntityGroupsByItsPartitionColumnAccountId) {
  ViewDeclaration view{.name = "balances",
                       .entity = "transaction",
                       .by_partition = true,
                       .columns = {ViewColumn{.name = "balance", .aggregate = ViewAggregate::kSum, .field = "amount"}}};
  EXPECT_EQ(check_view(view, built_in_transaction_entity()), std::nullopt);
  EXPECT_EQ(group_columns(view, built_in_transaction_entity()), std::vector<std::string>{"account_id"});
  EXPECT_EQ(check_view(view, orders()),
            error(ViewPart::kEntity, kWholePart, "view balances reads entity 'transaction', not 'orders'"));
}

TEST(ViewDeclaration, NoEntityTableMayBeNamedLikeAVersionOfTheView) {
  auto other = orders();
  other.name = "archive";
  other.table = "paid_by_customer_v2";
  EXPECT_EQ(check_view_tables_unused({{"orders", orders()}}, paid_by_customer()), std::nullopt);
  EXPECT_EQ(check_view_tables_unused({{"orders", orders()}, {"archive", other}}, paid_by_customer()),
            "entity archive's table 'paid_by_customer_v2' has the name of a version of this view "
            "(paid_by_customer_v<N>); name the view or the table otherwise");
  other.table = "paid_by_customer_vx";
  EXPECT_EQ(check_view_tables_unused({{"archive", other}}, paid_by_customer()), std::nullopt);
}

TEST(ViewStrategy, APartitionGroupedViewWithoutMinOrMaxTakesTheVersionFilter) {
  ViewDeclaration view = paid_by_customer();
  view.by_partition = true;
  view.group_by.clear();
  EXPECT_EQ(choose_strategy(view),
            (StrategyChoice{ViewStrategy::kVersionFilter,
                            "group_by is the partition key: each group's events arrive in per-partition order, so a "
                            "version filter drops redeliveries (rule 15)"}));
  EXPECT_EQ(to_string(choose_strategy(view).strategy), "version_filter");
}

TEST(ViewStrategy, GroupsByFieldsEvenThePartitionFieldTakeTheInbox) {
  ViewDeclaration view = paid_by_customer();
  view.group_by = {"region", "status"};
  EXPECT_EQ(choose_strategy(view),
            (StrategyChoice{ViewStrategy::kInbox,
                            "group_by [region, status] is not the partition key: a group's events come from many "
                            "partitions in any order (rules 13, 14, 16)"}));
  EXPECT_EQ(choose_strategy(paid_by_customer()).strategy, ViewStrategy::kInbox);  // customer_id, the partition_by field
  EXPECT_EQ(to_string(ViewStrategy::kInbox), "inbox");
}

TEST(ViewStrategy, MinOrMaxTakesTheInboxEvenGroupedByPartition) {
  ViewDeclaration view = paid_by_customer();
  view.by_partition = true;
  view.group_by.clear();
  view.columns.push_back(ViewColumn{.name = "biggest", .aggregate = ViewAggregate::kMax, .field = "total"});
  EXPECT_EQ(choose_strategy(view),
            (StrategyChoice{ViewStrategy::kInbox, "max(total) needs each record's counted value to recompute its group"}));
}

}  // namespace
}  // namespace tidemark::pipeline
