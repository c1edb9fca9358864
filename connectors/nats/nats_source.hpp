#pragma once
// The NATS JetStream source (`kind: nats`, docs/sources.md "nats", docs/scale-out.md): one
// partition, the stream <stream>_<k>, read from just after its checkpoint up to the stream's
// last sequence when the partition was taken. Each message is one record, a JSON object.
#include <memory>
#include <string_view>

#include "connectors/nats/connection.hpp"
#include "connectors/nats/options.hpp"
#include "pipeline/core/record.hpp"
#include "pipeline/core/source.hpp"

namespace tidemark::connectors::nats {

// The format a quarantined record of this source is stored with: one JSON object, decoded
// again as the http source's records are (the same exact-number decoder).
inline constexpr std::string_view kRecordFormat = "json";

// The partition options.partition names (required). Connects on the first read, where the
// partition is taken: the stream must be the checkpoint's (same creation time) and still hold
// the sequence after it, or the read fails with pipeline::PartitionRefused unless accept_gap
// (the stream was purged, expired, or deleted and created again; serve counts it in
// tidemark_nats_partitions_refused_total).
std::unique_ptr<pipeline::Source> open_nats_partition(const NatsSourceOptions& options,
                                                      std::shared_ptr<const pipeline::RecordLayout> layout);

// Watches the partitions' streams on one connection to `options.servers` (made here): a
// partition has work when its stream holds a message after the checkpoint, or is missing or
// not the stream the checkpoint names (the run then fails, saying why). serve asks before
// each run it starts, so that an idle partition records no runs. has_work throws NatsError
// when the server cannot answer.
std::unique_ptr<pipeline::PartitionWatcher> watch_partitions(const NatsSourceOptions& options);

}  // namespace tidemark::connectors::nats
