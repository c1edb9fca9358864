#pragma once
// The subjects the NATS sink publishes to, built from an event's partition key. Pure: no
// connection, no clock (unit-tested in connectors/nats_sink/tests/nats_sink_subject_test.cpp).
#include <string>
#include <string_view>

namespace tidemark::connectors::nats_sink {

// The last token of the subject of an event without a partition key. No encoded key can be
// it: a key never holds a NUL byte (PostgreSQL text cannot), so "%00" never comes out of
// subject_token, and an empty key has no token of its own (NATS refuses empty tokens).
inline constexpr std::string_view kNoPartitionToken = "%00";

// `key` as one subject token: A-Z, a-z, 0-9, '_' and '-' as they are; every other byte ('.',
// '*', '>', spaces, '%', UTF-8 bytes …) as %XX (upper-case hex). Reversible and the same on
// every attempt, so one key always lands on one subject and a consumer can filter by it.
// An empty key gives "" (subject_for uses kNoPartitionToken then).
std::string subject_token(std::string_view key);

// `<subject>.<subject_token(partition_key)>`, or `<subject>.%00` when the event has no key.
std::string subject_for(std::string_view subject, std::string_view partition_key);

// True when `subject` is a subject one can publish to: dot-separated tokens, none empty,
// no wildcard ('*', '>') and no whitespace or control character. What a destination's
// `subject:` must be.
bool is_publish_subject(std::string_view subject);

// True when `name` can name a JetStream stream: 1-255 printable ASCII characters other than
// '.', '*', '>', '/', '\\' and space (the server refuses the others).
bool is_stream_name(std::string_view name);

}  // namespace tidemark::connectors::nats_sink
