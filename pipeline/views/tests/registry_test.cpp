// The registry of views: a name finds its View, and an unknown name is refused with the names
// Tidemark ships.
#include "pipeline/views/registry.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline/core/view_declaration.hpp"
#include "pipeline/views/account_balance.hpp"
#include "pipeline/views/daily_totals.hpp"

namespace tidemark::pipeline::views {
namespace {

TEST(ViewRegistry, FindsEachShippedViewByItsNameReadingTheBuiltInEntity) {
  EXPECT_EQ(view_names(), (std::vector<std::string>{kAccountBalance, kDailyTotals}));
  for (const auto& name : view_names()) {
    const View* view = find_view(name);
    ASSERT_NE(view, nullptr) << name;
    EXPECT_EQ(view->name(), name);
    EXPECT_EQ(view->entity(), "transaction");
    EXPECT_EQ(&known_view(name), view);
  }
  EXPECT_EQ(view_list(" and "), "account_balance and daily_totals");
}

// The core keeps these names from declared views (check_view_name): it may not miss one.
TEST(ViewRegistry, TheCoresListOfShippedViewNamesIsTheRegistrys) {
  EXPECT_EQ(view_names(), std::vector<std::string>(kShippedViewNames.begin(), kShippedViewNames.end()));
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

}  // namespace
}  // namespace tidemark::pipeline::views
