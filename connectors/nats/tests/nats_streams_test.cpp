// What `nats setup` creates for each partition, how it reports an existing stream that
// differs, and the mapping block `nats mapping` prints.
#include "connectors/nats/streams.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tidemark::connectors::nats {
namespace {

using ::testing::ElementsAre;

NatsSourceOptions orders() {
  NatsSourceOptions options;
  options.servers = {"nats://127.0.0.1:4222"};
  options.stream = "ORDERS";
  options.partitions = 4;
  options.replicas = 3;
  options.duplicate_window = std::chrono::minutes(10);
  return options;
}

// An existing stream exactly as setup would create it.
StreamInfo as_created(const StreamSpec& spec) {
  StreamInfo info;
  info.name = spec.name;
  info.subjects = {spec.subjects};
  info.replicas = spec.replicas;
  info.deny_delete = spec.deny_delete;
  info.deny_purge = spec.deny_purge;
  info.duplicate_window_ns = spec.duplicate_window_ns;
  info.max_age_ns = spec.max_age_ns;
  info.max_bytes = spec.max_bytes;
  return info;
}

TEST(NatsStreams, PartitionKIsStreamNameUnderscoreKWithSubjectsNameDotKDotAnything) {
  const StreamSpec spec = partition_spec(orders(), 3);
  EXPECT_EQ(spec.name, "ORDERS_3");
  EXPECT_EQ(spec.subjects, "ORDERS.3.>");
  EXPECT_EQ(spec.replicas, 3);
  EXPECT_TRUE(spec.deny_delete);
  EXPECT_TRUE(spec.deny_purge);
  EXPECT_EQ(spec.duplicate_window_ns, 600'000'000'000);
  EXPECT_EQ(spec.max_age_ns, 0);  // unset: unlimited
  EXPECT_EQ(spec.max_bytes, -1);
}

TEST(NatsStreams, MaxAgeAndMaxBytesAreSetWhenConfigured) {
  NatsSourceOptions options = orders();
  options.max_age = std::chrono::hours(24);
  options.max_bytes = 1 << 30;
  const StreamSpec spec = partition_spec(options, 0);
  EXPECT_EQ(spec.max_age_ns, 86'400'000'000'000);
  EXPECT_EQ(spec.max_bytes, 1 << 30);
}

TEST(NatsStreams, AStreamAsConfiguredHasNoDifference) {
  const StreamSpec spec = partition_spec(orders(), 0);
  EXPECT_TRUE(differences(spec, as_created(spec)).empty());
}

TEST(NatsStreams, EachDifferingSettingIsOneLineWithBothValues) {
  const StreamSpec spec = partition_spec(orders(), 0);
  StreamInfo existing = as_created(spec);
  existing.replicas = 1;
  existing.deny_purge = false;
  existing.duplicate_window_ns = 120'000'000'000;
  existing.file_storage = false;
  EXPECT_THAT(differences(spec, existing),
              ElementsAre("storage: memory, configured file", "replicas: 1, configured 3",
                          "deny_purge: false, configured true (can be set, never unset)",
                          "duplicate_window: 120s, configured 600s"));
}

TEST(NatsStreams, MappingSpreadsKeysOverThePartitionsByTheFirstWildcard) {
  EXPECT_EQ(mapping_block(orders()),
            "mappings {\n  \"ORDERS.in.*\": \"ORDERS.{{partition(4,1)}}.{{wildcard(1)}}\"\n}\n");
}

}  // namespace
}  // namespace tidemark::connectors::nats
