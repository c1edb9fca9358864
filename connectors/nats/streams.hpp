#pragma once
// The partitions of a nats source as JetStream streams: what `nats setup` creates, how an
// existing stream differs from it, and the subject mapping that spreads producers' keys over
// the partitions. Pure; connection.hpp talks to the server.
#include <string>
#include <vector>

#include "connectors/nats/connection.hpp"
#include "connectors/nats/options.hpp"

namespace tidemark::connectors::nats {

// Partition k's stream as configured: file storage, limits retention, R=replicas,
// DenyDelete and DenyPurge, the duplicate window, max_age/max_bytes when set.
StreamSpec partition_spec(const NatsSourceOptions& options, int partition);

// How `existing` differs from `spec`, one line per setting ("replicas: 1, configured 3");
// empty when it matches. Settings JetStream never changes afterwards are marked so.
std::vector<std::string> differences(const StreamSpec& spec, const StreamInfo& existing);

// The server configuration block that maps <stream>.in.<key> to <stream>.<partition>.<key>,
// the partition chosen by the server from a hash of the key.
std::string mapping_block(const NatsSourceOptions& options);

}  // namespace tidemark::connectors::nats
