// A config naming an unknown view is a configuration error before any database is touched.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "app/wiring/options.hpp"
#include "pipeline/views/account_balance.hpp"

namespace tidemark::pipeline::views {
namespace {

TEST(ViewSinks, AConfigNamingAnUnknownViewIsAConfigErrorBeforeAnyConnection) {
  Config config;
  PipelineConfig pipeline;
  pipeline.name = "orders";
  pipeline.destinations = {{kAccountBalance, pipeline::ViewDestinationOptions{}},
                           {"monthly_totals", pipeline::ViewDestinationOptions{}}};
  config.pipelines["orders"] = pipeline;
  // An unreachable database: the name check must come first.
  EXPECT_THAT([&] { app::make_view_sinks(config, "postgresql://nobody@127.0.0.1:1/none"); },
              testing::ThrowsMessage<ConfigError>(testing::HasSubstr(
                  "destination 'monthly_totals' is of kind view, but tidemark has no such view "
                  "(account_balance, daily_totals)")));
}

}  // namespace
}  // namespace tidemark::pipeline::views
