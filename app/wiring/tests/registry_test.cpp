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

#include "pipeline/core/entity.hpp"
#include "pipeline/core/validate.hpp"

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

// A partitioned kind can be watched for news (asking connects to it, which fails here, where
// no server runs, with the connector's own error); the other kinds have nothing to watch.
TEST(Registry, EveryPartitionedKindHasAWatcherAndNoOtherKindHasOne) {
  for (const auto& source : one_source_of_each_kind()) {
    if (source.capabilities().partitioned) {
      try {
        watch_partitions(source);
      } catch (const std::invalid_argument& error) {
        ADD_FAILURE() << source.kind() << ": " << error.what();
      } catch (const std::exception&) {
      }
    } else {
      EXPECT_THROW(watch_partitions(source), std::invalid_argument) << source.kind();
    }
  }
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

// A release decodes a quarantined record with the decoder of the kind that stored it: each
// stored format reaches its own decoder, and one no kind declares is a decode error naming it.
TEST(Registry, TheQuarantineDecoderDecodesEachStoredFormatWithItsKindsDecoder) {
  const pipeline::RecordLayout layout = pipeline::record_layout(pipeline::built_in_transaction_entity());
  const auto amount = [&](const pipeline::DecodedRecord& record) {
    EXPECT_FALSE(record.decode_error) << *record.decode_error;
    const auto& field = record.field(*layout.index("amount"));
    return field ? field->text : std::string("(absent)");
  };
  const pipeline::RecordDecoder& decoder = quarantine_decoder();
  EXPECT_EQ(amount(decoder.decode("csv", "transaction_id,source_revision,amount", "t1,1,1.50", "in.csv", layout)),
            "1.50");
  const std::string object = R"({"transaction_id": "t1", "source_revision": 1, "amount": 2.25})";
  EXPECT_EQ(amount(decoder.decode("jsonl", "", object, "in.jsonl", layout)), "2.25");
  EXPECT_EQ(amount(decoder.decode("json", "", object, "https://api.example/orders", layout)), "2.25");
  const pipeline::DecodedRecord unknown = decoder.decode("parquet", "", "t1", "in.parquet", layout);
  ASSERT_TRUE(unknown.decode_error);
  EXPECT_EQ(*unknown.decode_error, "no source kind decodes the stored format 'parquet'");
  EXPECT_EQ(unknown.raw, "t1");
}

}  // namespace
}  // namespace tidemark::app
