// app/wiring's kind -> factory registry: every kind the config parser admits (every
// alternative of SourceOptions and DestinationOptions) has a factory and a check.
#include "app/wiring/registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <utility>
#include <variant>

namespace tidemark::app {
namespace {

using ::testing::HasSubstr;

// One source of each kind SourceOptions holds.
std::vector<app::config::SourceConfig> one_source_of_each_kind() {
  std::vector<app::config::SourceConfig> sources;
  [&]<std::size_t... kind>(std::index_sequence<kind...>) {
    (sources.push_back({app::config::SourceOptions(std::in_place_index<kind>)}), ...);
  }(std::make_index_sequence<std::variant_size_v<app::config::SourceOptions>>());
  return sources;
}

TEST(Registry, EveryConfigKindHasAFactory) {
  for (const auto& source : one_source_of_each_kind()) {
    EXPECT_TRUE(source_factory(source)) << source.kind();
    EXPECT_TRUE(source_check(source)) << source.kind();
  }
  const auto factories = sink_factories();
  ASSERT_EQ(factories.size(), std::variant_size_v<app::config::DestinationOptions>);
  for (const auto& factory : factories) EXPECT_TRUE(factory);
  std::vector<app::config::DestinationConfig> destinations;
  [&]<std::size_t... kind>(std::index_sequence<kind...>) {
    (destinations.push_back({.options = app::config::DestinationOptions(std::in_place_index<kind>)}), ...);
  }(std::make_index_sequence<std::variant_size_v<app::config::DestinationOptions>>());
  for (const auto& destination : destinations) EXPECT_TRUE(destination_check(destination)) << destination.kind();
}

TEST(Registry, TheFileFactoryOpensTheConfiguredFile) {
  const auto path = std::filesystem::path(::testing::TempDir()) / "tidemark_registry_test.csv";
  {
    std::ofstream out(path);
    out << "transaction_id,source_revision,amount\nt1,1,1.00\n";
  }
  const app::config::SourceConfig config{connectors::file::FileSourceOptions{.path = path.string(), .format = connectors::file::Format::kCsv}};
  const auto source = source_factory(config)(config, pipeline::built_in_transaction_entity());
  ASSERT_NE(source, nullptr);
  std::vector<pipeline::DecodedRecord> records;
  EXPECT_EQ(source->read(records, 10, 1 << 20), 1u);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tidemark::app
