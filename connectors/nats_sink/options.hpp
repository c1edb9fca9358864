#pragma once
// What a `kind: nats` destination is configured with (docs/delivery.md "NATS JetStream
// destinations"), checked by the config parser. Plain values: app/wiring turns them into
// NatsSinkOptions (nats_sink.hpp), resolving creds_env, since a connector does not read the
// environment.
#include <string>
#include <vector>

namespace tidemark::connectors::nats_sink {

struct NatsDestinationOptions {
  std::vector<std::string> servers;  // nats://host:port, tried in order
  std::string subject;               // events go to `<subject>.<encoded partition key>`
  std::string stream;                // the JetStream stream that must capture them
  std::string creds_env;             // optional: the environment variable holding the path of a .creds file
};

}  // namespace tidemark::connectors::nats_sink
