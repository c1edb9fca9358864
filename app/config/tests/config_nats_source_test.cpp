// `source: {kind: nats, …}` (docs/configuration.md "NATS source"): every key into
// NatsSourceOptions, and each mistake a ConfigError naming the key and its line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "app/config/config.hpp"
#include "app/config/tests/config_errors.hpp"

namespace tidemark::app::config {
namespace {

using ::testing::HasSubstr;

TEST(ParseNatsSource, EveryKeyIsRead) {
  const auto config = parse_config(
      pipeline_with("{kind: nats, servers: [nats://127.0.0.1:4222, nats://127.0.0.1:4223], stream: ORDERS, "
                    "partitions: 4, replicas: 3, format: jsonl, duplicate_window: 10m, max_age: 168h, "
                    "max_bytes: 1073741824}"),
      "config.yaml");
  const auto& source = config.pipelines.at("orders").source;
  EXPECT_EQ(source.kind(), "nats");
  EXPECT_EQ(source.kind(), "nats");
  const auto& nats = nats_of(source);
  EXPECT_EQ(nats.servers, (std::vector<std::string>{"nats://127.0.0.1:4222", "nats://127.0.0.1:4223"}));
  EXPECT_EQ(nats.stream, "ORDERS");
  EXPECT_EQ(nats.partitions, 4);
  EXPECT_EQ(nats.replicas, 3);
  EXPECT_EQ(nats.duplicate_window, std::chrono::minutes(10));
  EXPECT_EQ(nats.max_age, std::chrono::hours(168));
  EXPECT_EQ(nats.max_bytes, 1073741824);
  EXPECT_FALSE(nats.partition.has_value());  // chosen per run, never by the file
  EXPECT_FALSE(nats.accept_gap);
  EXPECT_EQ(nats.origin, "config.yaml:3: pipelines.orders.source");
}

TEST(ParseNatsSource, DefaultsAreOnePartitionOneReplicaTheTwoMinuteWindowAndNoLimits) {
  const auto config = parse_config(pipeline_with("{kind: nats, servers: [nats://n1:4222], stream: ORDERS}"),
                                   "config.yaml");
  const auto& nats = nats_of(config.pipelines.at("orders").source);
  EXPECT_EQ(nats.partitions, 1);
  EXPECT_EQ(nats.replicas, 1);
  EXPECT_EQ(nats.duplicate_window, std::chrono::minutes(2));
  EXPECT_FALSE(nats.max_age.has_value());
  EXPECT_FALSE(nats.max_bytes.has_value());
}

// The workers' timing (docs/scale-out.md "Workers"): 30 s and 10 s unless set; a live worker
// must beat at least twice per owner timeout.
TEST(ParseNatsSource, WorkersTimingDefaultsAndItsRule) {
  const std::string head = "{kind: nats, servers: [nats://n1:4222], stream: ORDERS";
  const auto defaults = nats_of(parse_config(pipeline_with(head + "}"), "config.yaml").pipelines.at("orders").source);
  EXPECT_EQ(defaults.owner_timeout, std::chrono::seconds(30));
  EXPECT_EQ(defaults.rebalance_interval, std::chrono::seconds(10));
  const auto set = nats_of(
      parse_config(pipeline_with(head + ", owner_timeout: 2s, rebalance_interval: 500ms}"), "config.yaml")
          .pipelines.at("orders")
          .source);
  EXPECT_EQ(set.owner_timeout, std::chrono::seconds(2));
  EXPECT_EQ(set.rebalance_interval, std::chrono::milliseconds(500));
  EXPECT_THAT(config_error(pipeline_with(head + ", rebalance_interval: 20s}")),
              HasSubstr("config.yaml:3: pipelines.orders.source.rebalance_interval: expected a duration of at most "
                        "half the owner_timeout (30s)"));
  EXPECT_THAT(config_error(pipeline_with(head + ", owner_timeout: 15s}")),
              HasSubstr("pipelines.orders.source.owner_timeout: expected a duration of at least twice the "
                        "rebalance_interval (10s)"));
  EXPECT_THAT(config_error(pipeline_with(head + ", owner_timeout: never}")), HasSubstr("owner_timeout"));
}

TEST(ParseNatsSourceErrors, EachMistakeNamesTheLineAndTheKey) {
  const std::string head = "{kind: nats, servers: [nats://n1:4222], stream: ORDERS, ";
  EXPECT_THAT(config_error(pipeline_with("{kind: nats, stream: ORDERS}")),
              HasSubstr("config.yaml:3: pipelines.orders.source: missing required key 'servers'"));
  EXPECT_THAT(config_error(pipeline_with("{kind: nats, servers: [], stream: ORDERS}")),
              HasSubstr("config.yaml:3: pipelines.orders.source.servers"));
  EXPECT_THAT(config_error(pipeline_with("{kind: nats, servers: [http://n1:4222], stream: ORDERS}")),
              HasSubstr("servers[0]"));
  EXPECT_THAT(config_error(pipeline_with("{kind: nats, servers: [nats://n1:4222]}")), HasSubstr("missing required key 'stream'"));
  EXPECT_THAT(config_error(pipeline_with("{kind: nats, servers: [nats://n1:4222], stream: ORDERS.in}")),
              HasSubstr("a stream name of letters, digits, '_' and '-'"));
  EXPECT_THAT(config_error(pipeline_with(head + "partitions: 0}")), HasSubstr("partitions"));
  EXPECT_THAT(config_error(pipeline_with(head + "replicas: 7}")), HasSubstr("an integer from 1 to 5"));
  EXPECT_THAT(config_error(pipeline_with(head + "format: csv}")), HasSubstr("jsonl (each message is one JSON object)"));
  EXPECT_THAT(config_error(pipeline_with(head + "duplicate_window: soon}")), HasSubstr("duplicate_window"));
  EXPECT_THAT(config_error(pipeline_with(head + "max_bytes: -5}")), HasSubstr("a positive number of bytes"));
  EXPECT_THAT(config_error(pipeline_with(head + "path: x.csv}")), HasSubstr("unknown key 'path'"));
  // A key on its own line: the message names that line.
  EXPECT_THAT(config_error("pipelines:\n  orders:\n    source:\n      kind: nats\n      servers: [nats://n1:4222]\n"
                           "      stream: ORDERS\n      replicas: zero\n"),
              HasSubstr("config.yaml:7:"));
}

TEST(ParseNatsSourceErrors, ANatsPipelineTakesNoScheduleSinceServeConsumesItContinuously) {
  EXPECT_THAT(config_error(pipeline_with("{kind: nats, servers: [nats://n1:4222], stream: ORDERS}") +
                           "    schedule: {every: 1m}\n"),
              HasSubstr("config.yaml:4: pipelines.orders.schedule: a nats pipeline takes no schedule: serve consumes "
                        "its partitions continuously"));
  EXPECT_EQ(config_error(pipeline_with("{path: in.csv}") + "    schedule: {every: 1m}\n"), "");
}

// Callers ask a source what it can do, never which kind it is (issue 37): a nats source is
// read as partitions, each its own source; a file source alone takes `run --source`.
TEST(ParseNatsSource, ItsCapabilitiesAndPartitions) {
  const auto config = parse_config(
      pipeline_with("{kind: nats, servers: [nats://n1:4222], stream: ORDERS, partitions: 3, owner_timeout: 40s, "
                    "rebalance_interval: 15s}"),
      "config.yaml");
  const auto& source = config.pipelines.at("orders").source;
  EXPECT_EQ(source.kind(), "nats");
  EXPECT_TRUE(source.capabilities().partitioned);
  EXPECT_FALSE(source.capabilities().takes_file_override);
  EXPECT_EQ(source.partition_count(), 3);
  EXPECT_EQ(source.partition_name(2), "ORDERS_2");
  EXPECT_EQ(nats_of(source.partition(2)).partition, 2);
  EXPECT_EQ(source.partition(2).partition_count(), 3);  // a partition is a source of the same kind
  EXPECT_EQ(source.owner_timeout(), std::chrono::seconds(40));
  EXPECT_EQ(source.rebalance_interval(), std::chrono::seconds(15));
  const SourceConfig file;  // a file source, the default
  EXPECT_FALSE(file.capabilities().partitioned);
  EXPECT_TRUE(file.capabilities().takes_file_override);
  EXPECT_EQ(file.partition_count(), 1);
  EXPECT_THROW(file.partition(0), std::logic_error);
  EXPECT_THROW(file.owner_timeout(), std::logic_error);
}

}  // namespace
}  // namespace tidemark::app::config
