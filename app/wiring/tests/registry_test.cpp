// app/wiring's kind -> factory registry: every kind the config parser admits has a
// factory, and a kind without one is refused, naming it, rather than silently building nothing.
#include "app/wiring/registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace tidemark::app {
namespace {

using ::testing::HasSubstr;
using pipeline::DestinationKind;
using pipeline::SourceKind;

TEST(Registry, EveryConfigKindHasAFactory) {
  EXPECT_TRUE(source_factory(SourceKind::kFile));
  EXPECT_TRUE(sink_factory(DestinationKind::kHttp));
  EXPECT_TRUE(sink_factory(DestinationKind::kView));
  EXPECT_TRUE(sink_factory(DestinationKind::kNats));
  EXPECT_EQ(sink_kinds(), (std::vector<DestinationKind>{DestinationKind::kHttp, DestinationKind::kView,
                                                        DestinationKind::kNats}));
}

TEST(Registry, AKindWithoutAFactoryIsRefusedNamingIt) {
  try {
    source_factory(static_cast<SourceKind>(7));
    FAIL() << "an unregistered source kind must be refused";
  } catch (const std::invalid_argument& error) {
    EXPECT_THAT(error.what(), HasSubstr("no factory is registered for source kind 'unknown' (7)"));
  }
  try {
    sink_factory(static_cast<DestinationKind>(9));
    FAIL() << "an unregistered destination kind must be refused";
  } catch (const std::invalid_argument& error) {
    EXPECT_THAT(error.what(), HasSubstr("no factory is registered for destination kind 'unknown' (9)"));
  }
}

TEST(Registry, TheFileFactoryOpensTheConfiguredFile) {
  const auto path = std::filesystem::path(::testing::TempDir()) / "tidemark_registry_test.csv";
  {
    std::ofstream out(path);
    out << "transaction_id,source_revision,amount\nt1,1,1.00\n";
  }
  pipeline::SourceConfig config;
  config.path = path.string();
  config.format = pipeline::Format::kCsv;
  const auto source = source_factory(SourceKind::kFile)(config, pipeline::built_in_transaction_entity());
  ASSERT_NE(source, nullptr);
  std::vector<pipeline::DecodedRecord> records;
  EXPECT_EQ(source->read(records, 10, 1 << 20), 1u);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tidemark::app
