#pragma once
// A real webhook receiver for tests: an HTTP server on 127.0.0.1 (port 0) on its own threads
// that verifies Standard Webhooks signatures, records every request, applies each webhook-id
// once like a well-behaved receiver, and can be told to fail in the ways the world fails.
// Given a certificate it speaks HTTPS instead.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tidemark::testing {

enum class Failure {
  kNone,
  kServerError,      // 500
  kTooManyRequests,  // 429 with Retry-After (retry_after_seconds)
  kSlow,             // applies the event, then answers only after slow_delay (past the client's timeout)
  kDrop,             // closes the connection without answering
  kBadRequest,       // 400
  kGone,             // 410: the endpoint is gone
  // Applies the event, answers 200 with a chunked body and streams chunks without end: for
  // slow_delay at most, or until the client hangs up (see set_endless_chunk_interval).
  kEndlessBody,
};

struct ReceivedRequest {
  std::string method;  // "POST"
  std::string target;  // the request target as sent: "/events"
  std::string webhook_id;
  std::string key;  // webhook-id percent-decoded: the outbox idempotency_key (docs/delivery.md)
  std::string idempotency_key;
  std::string content_type;
  std::string webhook_timestamp;  // as received, so that a test can check the signature itself
  std::string webhook_signature;
  std::string body;
  bool signature_valid = false;
  Failure failure = Failure::kNone;  // how it was answered (kNone: 2xx, or 401 when unsigned)
  bool applied = false;              // this request applied the event (its first valid arrival)
};

// The server side of a TLS receiver: its certificate (PEM) and unencrypted key (PEM).
struct TlsIdentity {
  std::filesystem::path cert_file;
  std::filesystem::path key_file;
};

class TestReceiver {
 public:
  // Verifies signatures with `secret` (whsec_…).
  explicit TestReceiver(const std::string& secret);
  // The same over TLS 1.2 or later, presenting `tls`.
  TestReceiver(const std::string& secret, const TlsIdentity& tls);
  ~TestReceiver();
  TestReceiver(const TestReceiver&) = delete;
  TestReceiver& operator=(const TestReceiver&) = delete;

  std::string url() const;  // http://127.0.0.1:PORT/events (https:// over TLS)
  unsigned short port() const;

  // Failure choice per request: scripted ones first, in order; then `always`; then random.
  void fail_next(Failure failure, int times = 1);
  void fail_always(Failure failure);  // kNone turns it off
  // A fraction `ratio` of requests fail, picking among `kinds`; the generator is seeded.
  void fail_randomly(double ratio, std::uint64_t seed, std::vector<Failure> kinds);
  void set_retry_after_seconds(int seconds);
  // The Retry-After value of 429 answers as sent, byte for byte (huge numbers, say).
  void set_retry_after(std::string value);
  // The body of the answers of one kind (kNone: the 2xx; kServerError; kBadRequest).
  void set_body(Failure kind, std::string body);
  // Decodes header values as Latin-1 (to UTF-8) before verifying and recording them, as
  // Python's http.server does; a header byte above 0x7F then no longer matches its signature.
  void read_headers_as_latin1(bool on = true);
  void set_slow_delay(std::chrono::milliseconds delay);
  // The pause between two chunks of a kEndlessBody answer (zero: as fast as the client reads).
  void set_endless_chunk_interval(std::chrono::milliseconds interval);
  // When the last kEndlessBody stream ended: the client hung up (or slow_delay ran out) then.
  std::optional<std::chrono::steady_clock::time_point> endless_body_ended() const;
  // While held, every request is recorded (and applied) and then waits, unanswered, until
  // release(): how many a client keeps in flight at once is then what the receiver holds.
  void hold();
  void release();
  // Answers the held request with this webhook-id (or the next one to come).
  void release_one(const std::string& webhook_id);
  // The most requests held at one moment; waits until `count` are held at once.
  int max_held() const;
  bool wait_for_held(int count, std::chrono::milliseconds timeout) const;

  std::vector<ReceivedRequest> requests() const;
  // TLS: the server name (SNI) each completed handshake asked for, "" when none was sent.
  std::vector<std::string> server_names() const;
  // The bodies of applied events, in the order they were applied.
  std::vector<std::string> applied_bodies() const;
  std::size_t applied_count() const;
  // The most requests with one webhook-id that were being handled at the same moment.
  int max_concurrent_per_id() const;
  // Waits until `count` requests have come (answered or not); false on timeout.
  bool wait_for_requests(std::size_t count, std::chrono::milliseconds timeout) const;
  // Waits until `count` events were applied; false on timeout.
  bool wait_for_applied(std::size_t count, std::chrono::milliseconds timeout) const;

 private:
  TestReceiver(const std::string& secret, const TlsIdentity* tls);  // tls null: plain HTTP
  class Server;
  friend class Server;
  struct State;
  std::shared_ptr<State> state_;
  std::unique_ptr<Server> server_;
};

}  // namespace tidemark::testing
