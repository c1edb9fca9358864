#pragma once
// The NATS edge, for the source and the sink (connectors/nats_sink) alike: one connection and
// its JetStream context, owned (RAII around natsConnection and jsCtx), with each client status
// turned into an exception that names what failed. The C client stays in the .cpp files.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "connectors/nats/options.hpp"
#include "pipeline/core/error.hpp"

namespace tidemark::connectors::nats {

// The server or the client failed (unreachable, timed out, an API error): the run fails.
struct NatsError : tidemark::Error {
  explicit NatsError(const std::string& message) : tidemark::Error(tidemark::ErrorKind::kTransient, message) {}
};

// How to reach the servers.
struct ConnectionOptions {
  std::vector<std::string> servers;   // nats://host:port, tried in order
  std::string credentials_file;       // a .creds file (user JWT and NKey seed); empty: none
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(5);
  // Bounds each JetStream request (a cluster may elect a leader meanwhile), a publish's wait
  // for its PubAck included.
  std::chrono::milliseconds request_timeout = std::chrono::seconds(10);
  // true: reconnect to any of the servers for ever; meanwhile requests fail at once (the
  // caller retries them) instead of waiting out their timeout. false (commands such as
  // `nats setup`): a lost server fails the command.
  bool reconnect = false;
};

// What a publish with a message id came to: stored, or the client's refusal as the sink
// classifies it (`status` nats.c's natsStatus, `api_error` the JetStream error code, 0: none).
struct Published {
  bool stored = false;
  bool duplicate = false;  // the stream already held a message with that id, within its window
  int status = 0;
  int api_error = 0;
  std::string error;  // the client's words, when not stored
};

// A stream as the server describes it: what `nats setup` compares and a partition checks.
struct StreamInfo {
  std::string name;
  std::int64_t created = 0;  // nanoseconds since the epoch, UTC
  std::uint64_t first_sequence = 0;
  std::uint64_t last_sequence = 0;
  std::uint64_t messages = 0;
  // The configuration:
  std::vector<std::string> subjects;
  bool file_storage = true;
  bool limits_retention = true;
  std::int64_t replicas = 1;
  bool deny_delete = false;
  bool deny_purge = false;
  std::int64_t duplicate_window_ns = 0;
  std::int64_t max_age_ns = 0;   // 0: unlimited
  std::int64_t max_bytes = -1;   // -1: unlimited
  std::string leader;            // the server that leads it in a cluster
};

// What `nats setup` creates: a partition's stream (streams.hpp builds it from the options),
// or a nats destination's (connectors/nats_sink).
struct StreamSpec {
  std::string name;
  std::string subjects;
  std::int64_t replicas = 1;
  bool deny_delete = true;
  bool deny_purge = true;
  std::int64_t duplicate_window_ns = 0;
  std::int64_t max_age_ns = 0;
  std::int64_t max_bytes = -1;
};

// One message of a stream, its body copied out of the client's buffer.
struct StreamMessage {
  std::uint64_t sequence = 0;
  std::string body;
};

class Connection {
 public:
  // Connects to the first server that answers.
  explicit Connection(const ConnectionOptions& options);
  explicit Connection(const std::vector<std::string>& servers) : Connection(ConnectionOptions{servers}) {}
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // nullopt when no stream has that name.
  std::optional<StreamInfo> stream_info(const std::string& name);
  StreamInfo add_stream(const StreamSpec& spec);
  // For tests and the runbook: removing messages or a whole stream.
  void purge_stream(const std::string& name);
  void delete_stream(const std::string& name);
  // Publishes one message and waits for the stream's acknowledgement; returns its sequence.
  std::uint64_t publish(const std::string& subject, const std::string& body);
  // Publishes `body` with header Nats-Msg-Id `msg_id`, to be stored by `stream` only, and waits
  // for the PubAck. Never throws for the server's or the connection's answer: the caller
  // classifies it. Safe to call from several threads at once.
  Published publish(const std::string& subject, std::string_view body, const std::string& msg_id,
                    const std::string& stream);
  // The servers, as messages show them.
  const std::string& servers() const { return servers_; }

 private:
  friend class PullConsumer;
  struct Handles;  // the client's natsConnection and jsCtx
  std::string servers_;  // as shown in messages
  std::chrono::milliseconds request_timeout_;
  std::unique_ptr<Handles> handles_;
};

// An ephemeral pull consumer of one stream, AckPolicy None (PostgreSQL holds the truth:
// explicit acks would redeliver a large uncommitted batch), delivering from `start_sequence`.
// Deleted when destroyed; the server also removes it once it sees no interest.
class PullConsumer {
 public:
  PullConsumer(Connection& connection, const std::string& stream, const std::string& subjects,
               std::uint64_t start_sequence);
  ~PullConsumer();
  PullConsumer(const PullConsumer&) = delete;
  PullConsumer& operator=(const PullConsumer&) = delete;

  // Up to `max` messages in stream order, waiting up to `wait_ms` for the first; empty when
  // none came in that time.
  std::vector<StreamMessage> fetch(int max, std::int64_t wait_ms);

 private:
  struct Handles;  // the client's natsSubscription
  std::string stream_;
  std::unique_ptr<Handles> handles_;
};

}  // namespace tidemark::connectors::nats
