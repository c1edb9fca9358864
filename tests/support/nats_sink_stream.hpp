#pragma once
// What the NATS sink's tests read back from a real JetStream server: a stream's messages with
// their Nats-Msg-Id, and a stream made with a chosen duplicate window (one `tidemark nats
// setup` would not make). Through nats.c, as the sink itself talks to the server.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tidemark::testing {

struct StoredMessage {
  std::uint64_t sequence = 0;
  std::string subject;
  std::string msg_id;  // the Nats-Msg-Id header
  std::string data;
};

// Every message `stream` holds on the server at `url`, in sequence order. Throws
// std::runtime_error when the server or the stream cannot be read.
std::vector<StoredMessage> read_stream(const std::string& url, const std::string& stream);

// How many messages of `messages` carry each Nats-Msg-Id.
std::map<std::string, int> count_by_msg_id(const std::vector<StoredMessage>& messages);

// Creates `stream` capturing `subjects` with a duplicate window of `duplicates`. Throws
// std::runtime_error when the server refuses.
void create_stream(const std::string& url, const std::string& stream, const std::vector<std::string>& subjects,
                   std::chrono::nanoseconds duplicates);

}  // namespace tidemark::testing
