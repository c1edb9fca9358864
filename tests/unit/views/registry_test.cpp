// The registry of views: a name finds its View, an unknown name is refused with the names
// Tidemark ships, and a config naming an unknown view is a configuration error before any
// database is touched.
#include "pipeline/views/registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/wiring/options.hpp"
#include "pipeline/views/account_balance.hpp"
#include "pipeline/views/daily_totals.hpp"

namespace tidemark::pipeline::views {
namespace {

TEST(ViewRegistry, FindsEachShippedViewByItsName) {
  EXPECT_EQ(view_names(), (std::vector<std::string>{kAccountBalance, kDailyTotals}));
  for (const auto& name : view_names()) {
    const View* view = find_view(name);
    ASSERT_NE(view, nullptr) << name;
    EXPECT_EQ(view->name(), name);
    EXPECT_EQ(&known_view(name), view);
  }
  EXPECT_EQ(view_list(" and "), "account_balance and daily_totals");
}

TEST(ViewRegistry, RefusesAnUnknownViewNamingTheShippedOnes) {
  EXPECT_EQ(find_view("account_balances"), nullptr);
  EXPECT_EQ(find_view(""), nullptr);
  try {
    known_view("monthly_totals");
    FAIL() << "known_view accepted an unknown view";
  } catch (const ViewError& error) {
    EXPECT_STREQ(error.what(), "unknown view 'monthly_totals': tidemark ships account_balance and daily_totals");
  }
}

TEST(ViewRegistry, OnlyAccountBalanceStartsFromASnapshot) {
  EXPECT_TRUE(known_view(kAccountBalance).snapshot_statement().has_value());
  EXPECT_FALSE(known_view(kDailyTotals).snapshot_statement().has_value());
}

TEST(ViewRegistry, AConfigNamingAnUnknownViewIsAConfigErrorBeforeAnyConnection) {
  Config config;
  PipelineConfig pipeline;
  pipeline.name = "orders";
  pipeline.destinations = {{kAccountBalance, pipeline::DestinationKind::kView, "", ""},
                           {"monthly_totals", pipeline::DestinationKind::kView, "", ""}};
  config.pipelines["orders"] = pipeline;
  // An unreachable database: the name check must come first.
  EXPECT_THAT([&] { app::make_view_sinks(config, "postgresql://nobody@127.0.0.1:1/none"); },
              testing::ThrowsMessage<ConfigError>(testing::HasSubstr(
                  "destination 'monthly_totals' is of kind view, but tidemark has no such view "
                  "(account_balance, daily_totals)")));
}

}  // namespace
}  // namespace tidemark::pipeline::views
