// A config naming an unknown view is a configuration error before any database is touched.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "app/wiring/options.hpp"
#include "pipeline/views/account_balance.hpp"

namespace tidemark::app {
namespace {

using config::Config;
using config::ConfigError;
using config::PipelineConfig;
using pipeline::views::kAccountBalance;

TEST(ViewSinks, AConfigNamingAnUnknownViewIsAConfigErrorBeforeAnyConnection) {
  Config loaded;
  PipelineConfig orders;
  orders.name = "orders";
  orders.destinations = {{kAccountBalance, config::ViewDestinationOptions{}},
                           {"monthly_totals", config::ViewDestinationOptions{}}};
  loaded.pipelines["orders"] = orders;
  // An unreachable database: the name check must come first.
  EXPECT_THAT([&] { make_view_sinks(loaded, "postgresql://nobody@127.0.0.1:1/none"); },
              testing::ThrowsMessage<ConfigError>(testing::HasSubstr(
                  "destination 'monthly_totals' is of kind view, but tidemark has no such view "
                  "(account_balance, daily_totals)")));
}

}  // namespace
}  // namespace tidemark::app
