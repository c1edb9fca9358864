// Publishes a nats pipeline's records for bench/nats_workers_bench.sh: COUNT order versions
// over KEYS keys, key k always to partition k % PARTITIONS (subject <STREAM>.<p>.o<k>), each
// publish waiting for its stream's acknowledgement.
//   nats_publish SERVER STREAM PARTITIONS COUNT KEYS
#include <cstdio>
#include <cstdlib>
#include <string>

#include "connectors/nats/connection.hpp"

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: nats_publish SERVER STREAM PARTITIONS COUNT KEYS\n");
    return 2;
  }
  const std::string stream = argv[2];
  const long partitions = std::atol(argv[3]);
  const long count = std::atol(argv[4]);
  const long keys = std::atol(argv[5]);
  if (partitions < 1 || count < 0 || keys < 1) {
    std::fprintf(stderr, "nats_publish: PARTITIONS and KEYS must be at least 1, COUNT at least 0\n");
    return 2;
  }
  try {
    tidemark::connectors::nats::Connection nats(std::vector<std::string>{argv[1]});
    for (long i = 0; i < count; ++i) {
      const long key = i % keys;
      const std::string body = R"({"order_id": "o)" + std::to_string(key) + R"(", "version": )" +
                               std::to_string(i / keys + 1) + R"(, "amount": ")" + std::to_string(key % 1000) + ".25\"}";
      nats.publish(stream + "." + std::to_string(key % partitions) + ".o" + std::to_string(key), body);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "nats_publish: %s\n", error.what());
    return 1;
  }
  return 0;
}
