// The `views:` section (docs/design/declared-views.md §1): parsed into checked declarations,
// each error at its line in the `FILE:LINE: views.NAME.KEY: message` form, all in one pass.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/config/config.hpp"
#include "app/config/tests/config_errors.hpp"

namespace tidemark::app::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using pipeline::FilterOp;
using pipeline::ViewAggregate;
using pipeline::ViewColumn;
using pipeline::ViewFilter;

// An entity `orders` on lines 1-10; tests append a views section from line 11.
constexpr const char* kOrders =
    "entities:\n"                                                   // 1
    "  orders:\n"                                                   // 2
    "    key: order_id\n"                                           // 3
    "    revision: version\n"                                       // 4
    "    partition_by: customer_id\n"                               // 5
    "    fields:\n"                                                 // 6
    "      customer_id: {type: text}\n"                             // 7
    "      status: {type: text}\n"                                  // 8
    "      total: {type: decimal, precision: 14, scale: 4}\n"       // 9
    "      paid: {type: boolean}\n";                                // 10

// `views:` on line 11, view `v` on line 12, then `lines` from line 13.
std::string view_v(const std::string& lines) { return std::string(kOrders) + "views:\n  v:\n" + lines; }

TEST(ParseViews, TheIssuesExampleParsesIntoItsCheckedDeclarationWithLines) {
  const Config config = parse_config(std::string(kOrders) +
                                         "views:\n"                                                     // 11
                                         "  paid_by_customer:\n"                                        // 12
                                         "    entity: orders\n"                                         // 13
                                         "    group_by: [customer_id]\n"                                // 14
                                         "    where: {status: [paid, shipped], total: {\">=\": 10}}\n"  // 15
                                         "    columns:\n"                                               // 16
                                         "      orders: count\n"                                        // 17
                                         "      paid_total: sum(total)\n"                               // 18
                                         "      biggest: max(total)\n",                                 // 19
                                     "config.yaml");
  ASSERT_EQ(config.views.size(), 1u);
  const ViewDeclaration& view = config.views.at("paid_by_customer");
  EXPECT_EQ(view.name, "paid_by_customer");
  EXPECT_EQ(view.entity, "orders");
  EXPECT_FALSE(view.by_partition);
  EXPECT_EQ(view.group_by, std::vector<std::string>{"customer_id"});
  // Values in the field's canonical form: the decimal at its scale.
  EXPECT_THAT(view.filters,
              ElementsAre(ViewFilter{.field = "status", .op = FilterOp::kIn, .values = {"paid", "shipped"}, .line = 15},
                          ViewFilter{.field = "total", .op = FilterOp::kGreaterOrEqual, .values = {"10.0000"}, .line = 15}));
  EXPECT_THAT(view.columns,
              ElementsAre(ViewColumn{.name = "orders", .aggregate = ViewAggregate::kCount, .line = 17},
                          ViewColumn{.name = "paid_total", .aggregate = ViewAggregate::kSum, .field = "total", .line = 18},
                          ViewColumn{.name = "biggest", .aggregate = ViewAggregate::kMax, .field = "total", .line = 19}));
  EXPECT_EQ(view.lines, (ViewDeclaration::Lines{.name = 12, .entity = 13, .group_by = 14}));
  EXPECT_EQ(pipeline::choose_strategy(view).strategy, pipeline::ViewStrategy::kInbox);
}

TEST(ParseViews, GroupByPartitionAndTheBuiltInEntity) {
  const Config config = parse_config(
      "views:\n  balances:\n    entity: transaction\n    group_by: partition\n    columns: {balance: sum(amount)}\n"
      "  by_status:\n    entity: transaction\n    group_by: [account_id]\n    where: {amount: {\">\": 0, \"<=\": 100}}\n"
      "    columns: {n: count}\n",
      "config.yaml");
  const ViewDeclaration& balances = config.views.at("balances");
  EXPECT_TRUE(balances.by_partition);
  EXPECT_TRUE(balances.group_by.empty());
  EXPECT_EQ(pipeline::choose_strategy(balances).strategy, pipeline::ViewStrategy::kVersionFilter);
  EXPECT_THAT(config.views.at("by_status").filters,
              ElementsAre(ViewFilter{.field = "amount", .op = FilterOp::kGreater, .values = {"0.00"}, .line = 9},
                          ViewFilter{.field = "amount", .op = FilterOp::kLessOrEqual, .values = {"100.00"}, .line = 9}));
  EXPECT_TRUE(parse_config("", "config.yaml").views.empty());
}

TEST(ParseViewsErrors, MissingKeysAndWrongShapesNameTheKeyAndLine) {
  EXPECT_EQ(config_error(view_v("    group_by: [status]\n    columns: {n: count}\n")),
            "config.yaml:13: views.v: missing required key 'entity'");
  EXPECT_EQ(config_error(view_v("    entity: orders\n    columns: {n: count}\n")),
            "config.yaml:13: views.v: missing required key 'group_by'");
  EXPECT_EQ(config_error(view_v("    entity: orders\n    group_by: [status]\n")),
            "config.yaml:13: views.v: missing required key 'columns'");
  EXPECT_EQ(config_error(view_v("    entity: orders\n    group_by: status\n    columns: {n: count}\n")),
            "config.yaml:14: views.v.group_by: expected a list of fields, e.g. [customer_id], or partition, got \"status\"");
  EXPECT_EQ(config_error(view_v("    entity: orders\n    group_by: [status]\n    colums: {n: count}\n")),
            "config.yaml:15: unknown key 'colums' in views.v (expected one of: entity, group_by, where, columns)");
  EXPECT_EQ(config_error(std::string(kOrders) + "views: [v]\n"),
            "config.yaml:11: views: expected a map from view name to its declaration, got a list");
  EXPECT_EQ(config_error(view_v("    entity: orders\n    group_by: [status]\n    where: {status: }\n    columns: {n: count}\n")),
            "config.yaml:15: views.v.where.status: expected a value, a list of values or {OP: value} with OP <, <=, > or "
            ">=, got nothing");
  EXPECT_EQ(config_error(view_v("    entity: orders\n    group_by: [status]\n    where: {total: {\"=\": 1}}\n"
                                "    columns: {n: count}\n")),
            "config.yaml:15: views.v.where.total: expected a comparison <, <=, > or >=, got \"=\"");
  EXPECT_EQ(config_error(view_v("    entity: orders\n    group_by: [status]\n    where:\n      paid: true\n"
                                "      paid: false\n    columns: {n: count}\n")),
            "config.yaml:17: duplicate key 'paid' in views.v.where");
  EXPECT_EQ(config_error(view_v("    entity: orders\n    group_by: [status]\n    columns:\n      n: count\n"
                                "      n: sum(total)\n")),
            "config.yaml:17: duplicate key 'n' in views.v.columns");
}

TEST(ParseViewsErrors, TheEntityIsDeclaredOrBuiltIn) {
  EXPECT_EQ(config_error(view_v("    entity: order\n    group_by: [status]\n    columns: {n: count}\n")),
            "config.yaml:13: views.v.entity: unknown entity 'order' (declared: orders; transaction is the built-in one)");
  // An entity with an error of its own is not called unknown a second time.
  EXPECT_EQ(config_error("entities:\n  bad:\n    key: k\n    revision: k\n"
                         "views:\n  v:\n    entity: bad\n    group_by: [k]\n    columns: {n: count}\n"),
            "config.yaml:4: entities.bad.revision: 'k' is the key field too");
}

TEST(ParseViewsErrors, EachRuleOfTheCoreIsReportedAtItsItem) {
  const auto with = [](const std::string& group_by, const std::string& where, const std::string& columns) {
    return config_error(view_v("    entity: orders\n"                   // 13
                               "    group_by: " + group_by + "\n"       // 14
                               + (where.empty() ? "" : "    where:\n" + where)  // 15...
                               + "    columns:\n" + columns));
  };
  EXPECT_EQ(with("[customer_id, total]", "", "      n: count\n"),
            "config.yaml:14: views.v.group_by[1]: 'total' is a decimal field (group by text, integer, date or boolean "
            "fields, the key order_id, or write group_by: partition)");
  EXPECT_EQ(with("[customer_id]", "      status: paid\n      paid: \"yes\"\n", "      n: count\n"),
            "config.yaml:17: views.v.where.paid: not a boolean (true or false) in \"yes\"");
  EXPECT_EQ(with("[customer_id]", "      total: 10\n", "      n: count\n"),
            "config.yaml:16: views.v.where.total: compare decimal fields with <, <=, > or >= (e.g. {\">=\": \"10\"}), not "
            "for equality");
  EXPECT_EQ(with("[customer_id]", "", "      n: count\n      avg_total: avg(total)\n"),
            "config.yaml:17: views.v.columns.avg_total: expected count, sum(FIELD), min(FIELD) or max(FIELD), got "
            "\"avg(total)\"");
  EXPECT_EQ(with("[customer_id]", "", "      n: count\n      customer_id: count\n"),
            "config.yaml:17: views.v.columns.customer_id: 'customer_id' is a group_by column");
  EXPECT_EQ(with("[customer_id]", "", "      s: sum(status)\n"),
            "config.yaml:16: views.v.columns.s: sum(status): 'status' is a text field (sum integer or decimal fields)");
  EXPECT_EQ(with("[customer_id]", "", "      {}\n"),
            "config.yaml:15: views.v.columns: expected at least one column (NAME: count, sum(FIELD), min(FIELD) or "
            "max(FIELD))");
  EXPECT_EQ(with("[]", "", "      n: count\n"),
            "config.yaml:14: views.v.group_by: expected at least one field (group by text, integer, date or boolean "
            "fields, the key order_id, or write group_by: partition)");
}

TEST(ParseViewsErrors, NamesFollowTheEntityRuleAndCollideWithNothing) {
  EXPECT_EQ(config_error(std::string(kOrders) + "views:\n  Paid:\n    entity: orders\n    group_by: [status]\n"
                                                "    columns: {n: count}\n"),
            "config.yaml:12: views.Paid: view name 'Paid' is not a plain name ([a-z][a-z0-9_]{0,47}: a lowercase "
            "letter, then up to 47 lowercase letters, digits and '_')");
  EXPECT_THAT(config_error(std::string(kOrders) + "views:\n  account_balance:\n    entity: orders\n"
                                                  "    group_by: [status]\n    columns: {n: count}\n"),
              HasSubstr("config.yaml:12: views.account_balance: 'account_balance' is a view Tidemark ships"));
  EXPECT_EQ(config_error("entities:\n  archive:\n    table: v_v1\n    key: k\n    revision: r\n"
                         "views:\n  v:\n    entity: archive\n    group_by: [k]\n    columns: {n: count}\n"),
            "config.yaml:7: views.v: entity archive's table 'v_v1' has the name of a version of this view (v_v<N>); "
            "name the view or the table otherwise");
  EXPECT_EQ(config_error(std::string(kOrders) + "views:\n  v:\n    entity: orders\n    group_by: [status]\n"
                                                "    columns: {n: count}\n  v:\n    entity: orders\n"),
            "config.yaml:16: duplicate key 'v' in views");
}

TEST(ParseViewsErrors, NoDestinationMayNameADeclaredViewYet) {
  const std::string views = std::string(kOrders) + "views:\n  v:\n    entity: transaction\n    group_by: partition\n"
                                                   "    columns: {n: count}\n";  // 11-15
  EXPECT_EQ(config_error(views + "pipelines:\n  p:\n    source: {path: in.csv}\n    destinations: [{name: v, kind: view}]\n"),
            "config.yaml:19: pipelines.p.destinations[0].name: view 'v' is declared at line 12, but declared views are "
            "not built yet: no pipeline can feed one");
  EXPECT_EQ(config_error(views + "pipelines:\n  p:\n    source: {path: in.csv}\n"
                                 "    destinations: [{name: v, kind: http, url: \"http://x\"}]\n"),
            "config.yaml:19: pipelines.p.destinations[0].name: 'v' is the name of the view declared at line 12 (a view "
            "and a destination may not share a name)");
}

TEST(ParseViewsErrors, EveryViewsErrorIsReportedInOnePassInLineOrder) {
  const auto check = check_config(std::string(kOrders) +
                                      "views:\n"                            // 11
                                      "  a:\n"                              // 12
                                      "    entity: orders\n"                // 13
                                      "    group_by: [nope]\n"              // 14
                                      "    columns: {n: count}\n"           // 15
                                      "  b:\n"                              // 16
                                      "    entity: orders\n"                // 17
                                      "    group_by: partition\n"           // 18
                                      "    columns: {m: min(status)}\n"     // 19
                                      "  c:\n"                              // 20
                                      "    entity: orders\n"                // 21
                                      "    group_by: [status]\n"            // 22
                                      "    columns: {n: count}\n",          // 23
                                  "config.yaml");
  EXPECT_THAT(check.errors,
              ElementsAre("config.yaml:14: views.a.group_by[0]: 'nope' is not a declared field of entity orders (group "
                          "by text, integer, date or boolean fields, the key order_id, or write group_by: partition)",
                          "config.yaml:19: views.b.columns.m: min(status): 'status' is a text field (min and max apply "
                          "to integer, decimal, timestamp and date fields)"));
  EXPECT_EQ(check.config.views.size(), 1u);  // c
  EXPECT_TRUE(check.config.views.contains("c"));
}

}  // namespace
}  // namespace tidemark::app::config
