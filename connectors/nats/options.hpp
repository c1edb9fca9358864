#pragma once
// What a `kind: nats` source is configured with (docs/sources.md "nats", docs/scale-out.md),
// checked by the config parser and, against the server, when a partition is taken. Plain
// values: app/config includes this without the NATS client.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tidemark::connectors::nats {

// JetStream's own default duplicate window, used when the config sets none.
inline constexpr std::chrono::milliseconds kDefaultDuplicateWindow = std::chrono::minutes(2);

struct NatsSourceOptions {
  std::vector<std::string> servers;  // nats://host:port, tried in order
  std::string stream;                // the base name: partition k is the stream <stream>_<k>
  int partitions = 1;
  int replicas = 1;
  std::chrono::milliseconds duplicate_window = kDefaultDuplicateWindow;
  std::optional<std::chrono::milliseconds> max_age;  // limits retention: unset keeps messages for ever
  std::optional<std::int64_t> max_bytes;
  // Workers sharing the partitions (docs/scale-out.md "Workers"): a worker silent for
  // owner_timeout is dead and its partitions are taken; each worker beats and balances every
  // rebalance_interval.
  std::chrono::milliseconds owner_timeout = std::chrono::seconds(30);
  std::chrono::milliseconds rebalance_interval = std::chrono::seconds(10);
  // Not from the file: which partition this source reads (set per partition by the run
  // wiring), and `run --accept-gap`, which takes a partition whose stream lost messages
  // past the checkpoint or was recreated.
  std::optional<int> partition;
  bool accept_gap = false;
  // Where the source is configured ("tidemark.yaml:7: pipelines.orders.source"), for errors
  // found only against the server.
  std::string origin;
};

// The stream of partition k: ORDERS_3.
std::string partition_stream(const NatsSourceOptions& options, int partition);
// The subjects it captures: ORDERS.3.>
std::string partition_subjects(const NatsSourceOptions& options, int partition);

}  // namespace tidemark::connectors::nats
