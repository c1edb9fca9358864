// The relay's options as the config gives them: a destination's own window reaches the relay
// by its name.
#include "app/wiring/options.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "app/config/config.hpp"

namespace tidemark::app {
namespace {

using config::parse_config;

// A valid pipeline to which tests append one faulty line or block.
constexpr const char* kPipelineHead =
    "pipelines:\n"
    "  transactions:\n"
    "    source: {path: data/in.csv}\n";

// A destination's own window: read wherever the relay section is in the file,
// passed to the relay by name, and never above the relay's own window.
TEST(ParseConfig, ADestinationMayHaveAWindowOfItsOwn) {
  const auto config = parse_config(std::string(kPipelineHead) +
                                       "    destinations:\n"
                                       "      - {name: slow, kind: http, url: http://x/, secret_env: S, max_in_flight: 8}\n"
                                       "      - {name: fast, kind: http, url: http://y/, secret_env: S}\n"
                                       "relay: {max_in_flight: 64}\n",
                                   "config.yaml");
  const auto& destinations = config.pipelines.at("transactions").destinations;
  EXPECT_EQ(destinations.at(0).max_in_flight, std::optional<std::size_t>(8));
  EXPECT_EQ(destinations.at(1).max_in_flight, std::nullopt);
  const auto options = relay_options(config);
  EXPECT_EQ(options.config.max_in_flight, 64u);
  EXPECT_EQ(options.windows, (std::map<std::string, std::size_t>{{"slow", 8}}));
}

}  // namespace
}  // namespace tidemark::app
