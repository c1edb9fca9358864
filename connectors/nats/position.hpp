#pragma once
// A partition's checkpoint: the last stream sequence loaded and the stream's creation time,
// "<seq>@<created, RFC 3339 UTC with nanoseconds>" (1042@2026-12-02T16:48:41.123456789Z).
// The creation time tells a stream from one deleted and created again under its name. Pure.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tidemark::connectors::nats {

struct StreamPosition {
  std::uint64_t sequence = 0;  // the last sequence loaded
  std::string created;         // the stream's creation time as format_created writes it

  friend bool operator==(const StreamPosition&, const StreamPosition&) = default;
};

// A creation time from JetStream (nanoseconds since the epoch, UTC) as RFC 3339 with nine
// fraction digits: fixed width, so that two sort as text in time order.
std::string format_created(std::int64_t nanoseconds);

std::string to_text(const StreamPosition& position);
// nullopt for a text to_text did not write.
std::optional<StreamPosition> parse_position(std::string_view text);
// Whether `later` lies after `earlier`: a newer stream (creation time) first, then by sequence.
bool precedes(const StreamPosition& earlier, const StreamPosition& later);

}  // namespace tidemark::connectors::nats
