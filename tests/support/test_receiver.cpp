#include "tests/support/test_receiver.hpp"

#include <sys/socket.h>

#include <cctype>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <list>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "connectors/http/signature.hpp"

namespace tidemark::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

struct TestReceiver::State {
  std::string key;

  mutable std::mutex mutex;
  mutable std::condition_variable changed;
  bool stopping = false;

  std::deque<Failure> scripted;
  Failure always = Failure::kNone;
  double ratio = 0;
  std::vector<Failure> random_kinds;
  std::mt19937_64 rng;
  std::string retry_after = "1";
  bool latin1_headers = false;
  std::map<Failure, std::string> bodies = {{Failure::kServerError, "injected failure"},
                                           {Failure::kBadRequest, "rejected"},
                                           {Failure::kGone, "endpoint gone"}};
  std::chrono::milliseconds slow_delay{2000};
  std::chrono::milliseconds endless_chunk_interval{0};
  std::optional<std::chrono::steady_clock::time_point> endless_body_ended;

  std::vector<ReceivedRequest> requests;
  std::vector<std::string> server_names;
  std::set<std::string> applied_ids;
  std::vector<std::string> applied_bodies;
  std::map<std::string, int> handling;  // webhook-id -> requests being handled now
  int max_concurrent_per_id = 0;
  bool holding = false;
  std::multiset<std::string> released_ids;  // held requests let go one by one (release_one)
  int held = 0;  // requests waiting in the hold now
  int max_held = 0;

  Failure choose_failure() {
    if (!scripted.empty()) {
      const Failure failure = scripted.front();
      scripted.pop_front();
      return failure;
    }
    if (always != Failure::kNone) return always;
    if (ratio > 0 && !random_kinds.empty() && std::uniform_real_distribution<double>(0, 1)(rng) < ratio) {
      return random_kinds[std::uniform_int_distribution<std::size_t>(0, random_kinds.size() - 1)(rng)];
    }
    return Failure::kNone;
  }
};

// Accepts on one thread; every connection gets a thread of its own (blocking Beast calls),
// which keeps slow answers from holding up other connections.
class TestReceiver::Server {
 public:
  Server(std::shared_ptr<State> state, const TlsIdentity* tls)
      : state_(std::move(state)), acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    if (tls) {
      tls_.emplace(asio::ssl::context::tls_server);
      SSL_CTX_set_min_proto_version(tls_->native_handle(), TLS1_2_VERSION);
      tls_->use_certificate_chain_file(tls->cert_file.string());
      tls_->use_private_key_file(tls->key_file.string(), asio::ssl::context::pem);
    }
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] { accept_loop(); });
  }

  ~Server() {
    {
      std::lock_guard lock(state_->mutex);
      state_->stopping = true;
    }
    state_->changed.notify_all();
    beast::error_code ignored;
    // Wakes the blocking accept and every blocking read.
    acceptor_.cancel(ignored);
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    accept_thread_.join();
    {
      std::lock_guard lock(connections_mutex_);
      for (const auto& connection : connections_) {
        if (connection->socket->is_open()) ::shutdown(connection->socket->native_handle(), SHUT_RDWR);
      }
    }
    for (auto& connection : connections_) connection->thread.join();
  }

  unsigned short port() const { return port_; }
  bool tls() const { return tls_.has_value(); }

 private:
  void accept_loop() {
    for (;;) {
      auto socket = std::make_shared<tcp::socket>(io_);
      beast::error_code error;
      acceptor_.accept(*socket, error);
      {
        std::lock_guard lock(state_->mutex);
        if (state_->stopping) return;
      }
      if (error) continue;
      std::lock_guard lock(connections_mutex_);
      reap_finished();
      auto connection = std::make_unique<Connection>();
      connection->socket = socket;
      auto* done = &connection->done;
      connection->thread = std::thread([this, socket, done] {
        if (tls_) {
          serve_tls(*socket);
        } else {
          serve(*socket, *socket);
        }
        std::lock_guard guard(connections_mutex_);
        // Closed under the lock so that the destructor never shuts down a reused descriptor.
        beast::error_code ignored;
        socket->close(ignored);
        *done = true;
      });
      connections_.push_back(std::move(connection));
    }
  }

  // Joins the threads of closed connections, so that a long test does not pile them up.
  void reap_finished() {
    for (auto it = connections_.begin(); it != connections_.end();) {
      if ((*it)->done) {
        (*it)->thread.join();
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void serve_tls(tcp::socket& socket) {
    asio::ssl::stream<tcp::socket&> stream(socket, *tls_);
    beast::error_code error;
    // A client that refuses the certificate ends here: nothing of its request was received.
    stream.handshake(asio::ssl::stream_base::server, error);
    if (error) return;
    {
      std::lock_guard lock(state_->mutex);
      const char* name = SSL_get_servername(stream.native_handle(), TLSEXT_NAMETYPE_host_name);
      state_->server_names.emplace_back(name ? name : "");
    }
    serve(stream, socket);
  }

  // `stream` carries the HTTP bytes, over `socket` itself or over TLS on it.
  template <class Stream>
  void serve(Stream& stream, tcp::socket& socket) {
    beast::flat_buffer buffer;
    for (;;) {
      bhttp::request<bhttp::string_body> request;
      beast::error_code error;
      bhttp::read(stream, buffer, request, error);
      if (error) return;
      bool endless = false;
      const auto answer = handle(request, endless);
      if (!answer) {
        socket.shutdown(tcp::socket::shutdown_both, error);
        socket.close(error);
        return;
      }
      if (endless) {
        stream_endless_body(stream, *answer);
        finish(header(request, "webhook-id"));
        return;
      }
      bhttp::write(stream, *answer, error);
      finish(header(request, "webhook-id"));
      if (error || !request.keep_alive()) return;
    }
  }

  // The head of `answer` with a chunked body, then chunks until the client stops reading
  // them, the receiver stops or slow_delay has passed (a bound, so that a test ends).
  template <class Stream>
  void stream_endless_body(Stream& stream, bhttp::response<bhttp::string_body> answer) {
    std::chrono::milliseconds interval;
    std::chrono::steady_clock::time_point bound;
    {
      std::lock_guard lock(state_->mutex);
      interval = state_->endless_chunk_interval;
      bound = std::chrono::steady_clock::now() + state_->slow_delay;
    }
    bhttp::response<bhttp::empty_body> head{answer.result(), answer.version()};
    head.chunked(true);
    bhttp::response_serializer<bhttp::empty_body> serializer(head);
    beast::error_code error;
    bhttp::write_header(stream, serializer, error);
    // Paced chunks are small, so that a paced body stays below any cap the client reads up to.
    const std::string chunk(interval.count() > 0 ? 64 : 16 * 1024, 'x');
    while (!error && std::chrono::steady_clock::now() < bound) {
      asio::write(stream, bhttp::make_chunk(asio::buffer(chunk)), error);
      std::unique_lock lock(state_->mutex);
      if (state_->stopping) break;
      if (interval.count() > 0) state_->changed.wait_for(lock, interval, [this] { return state_->stopping; });
    }
    std::lock_guard lock(state_->mutex);
    state_->endless_body_ended = std::chrono::steady_clock::now();
    state_->changed.notify_all();
  }

  void finish(const std::string& id) {
    std::lock_guard lock(state_->mutex);
    --state_->handling[id];
  }

  // nullopt: drop the connection without an answer.
  // The relay percent-encodes the key into printable ASCII for the headers.
  static std::string percent_decode(std::string_view text) {
    std::string decoded;
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) != 0 &&
          std::isxdigit(static_cast<unsigned char>(text[i + 2])) != 0) {
        decoded += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
        i += 2;
      } else {
        decoded += text[i];
      }
    }
    return decoded;
  }

  // A header value as this receiver reads it: its bytes, or each byte as a Latin-1 character.
  std::string header(const bhttp::request<bhttp::string_body>& request, std::string_view name) {
    const std::string_view value = request[name];
    {
      std::lock_guard lock(state_->mutex);
      if (!state_->latin1_headers) return std::string(value);
    }
    std::string decoded;
    for (const char c : value) {
      const auto byte = static_cast<unsigned char>(c);
      if (byte < 0x80) {
        decoded += c;
      } else {
        decoded += static_cast<char>(0xC0 | (byte >> 6));
        decoded += static_cast<char>(0x80 | (byte & 0x3F));
      }
    }
    return decoded;
  }

  // `endless`: the answer's body is to be streamed without end (kEndlessBody).
  std::optional<bhttp::response<bhttp::string_body>> handle(const bhttp::request<bhttp::string_body>& request,
                                                            bool& endless) {
    ReceivedRequest received;
    received.method = std::string(request.method_string());
    received.target = std::string(request.target());
    received.webhook_id = header(request, "webhook-id");
    received.key = percent_decode(received.webhook_id);
    received.idempotency_key = header(request, "Idempotency-Key");
    received.content_type = std::string(request[bhttp::field::content_type]);
    received.body = request.body();
    received.webhook_timestamp = header(request, "webhook-timestamp");
    received.webhook_signature = header(request, "webhook-signature");
    const connectors::http::SignedHeaders headers{received.webhook_id, received.webhook_timestamp,
                                                  received.webhook_signature};
    received.signature_valid = connectors::http::verify(state_->key, headers, request.body(), std::time(nullptr)) ==
                               connectors::http::Verification::kValid;

    std::unique_lock lock(state_->mutex);
    const int handling = ++state_->handling[received.webhook_id];
    state_->max_concurrent_per_id = std::max(state_->max_concurrent_per_id, handling);

    bhttp::response<bhttp::string_body> response{bhttp::status::ok, request.version()};
    response.keep_alive(request.keep_alive());
    if (!received.signature_valid) {
      response.result(bhttp::status::unauthorized);
      response.body() = "bad signature";
    } else {
      received.failure = state_->choose_failure();
      switch (received.failure) {
        case Failure::kServerError:
          response.result(bhttp::status::internal_server_error);
          response.body() = state_->bodies[received.failure];
          break;
        case Failure::kTooManyRequests:
          response.result(bhttp::status::too_many_requests);
          response.set(bhttp::field::retry_after, state_->retry_after);
          break;
        case Failure::kBadRequest:
          response.result(bhttp::status::bad_request);
          response.body() = state_->bodies[received.failure];
          break;
        case Failure::kGone:
          response.result(bhttp::status::gone);
          response.body() = state_->bodies[received.failure];
          break;
        case Failure::kDrop:
          --state_->handling[received.webhook_id];
          state_->requests.push_back(std::move(received));
          state_->changed.notify_all();
          return std::nullopt;
        case Failure::kSlow:
        case Failure::kEndlessBody:
        case Failure::kNone:
          // Dedup by webhook-id: a repeat is acknowledged but not applied again.
          if (state_->applied_ids.insert(received.webhook_id).second) {
            received.applied = true;
            state_->applied_bodies.push_back(received.body);
          }
          response.body() = state_->bodies[Failure::kNone];
          break;
      }
    }
    const bool slow = received.failure == Failure::kSlow;
    endless = received.failure == Failure::kEndlessBody;
    const auto delay = state_->slow_delay;
    const std::string id = received.webhook_id;
    state_->requests.push_back(std::move(received));
    state_->changed.notify_all();
    if (slow) state_->changed.wait_for(lock, delay, [this] { return state_->stopping; });
    if (state_->holding) {
      state_->max_held = std::max(state_->max_held, ++state_->held);
      state_->changed.notify_all();
      state_->changed.wait(lock, [this, &id] {
        return !state_->holding || state_->stopping || state_->released_ids.erase(id) > 0;
      });
      --state_->held;
    }
    response.prepare_payload();
    return response;
  }

  std::shared_ptr<State> state_;
  std::optional<asio::ssl::context> tls_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::thread accept_thread_;
  struct Connection {
    std::shared_ptr<tcp::socket> socket;
    std::thread thread;
    bool done = false;  // guarded by connections_mutex_
  };
  std::mutex connections_mutex_;
  std::list<std::unique_ptr<Connection>> connections_;
};

TestReceiver::TestReceiver(const std::string& secret) : TestReceiver(secret, nullptr) {}

TestReceiver::TestReceiver(const std::string& secret, const TlsIdentity& tls) : TestReceiver(secret, &tls) {}

TestReceiver::TestReceiver(const std::string& secret, const TlsIdentity* tls) : state_(std::make_shared<State>()) {
  auto key = connectors::http::decode_secret(secret);
  if (!key) throw std::invalid_argument("TestReceiver needs a whsec_ secret");
  state_->key = std::move(*key);
  server_ = std::make_unique<Server>(state_, tls);
}

TestReceiver::~TestReceiver() = default;

std::string TestReceiver::url() const {
  return (server_->tls() ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port()) + "/events";
}

unsigned short TestReceiver::port() const { return server_->port(); }

void TestReceiver::fail_next(Failure failure, int times) {
  std::lock_guard lock(state_->mutex);
  for (int i = 0; i < times; ++i) state_->scripted.push_back(failure);
}

void TestReceiver::fail_always(Failure failure) {
  std::lock_guard lock(state_->mutex);
  state_->always = failure;
}

void TestReceiver::fail_randomly(double ratio, std::uint64_t seed, std::vector<Failure> kinds) {
  std::lock_guard lock(state_->mutex);
  state_->ratio = ratio;
  state_->rng.seed(seed);
  state_->random_kinds = std::move(kinds);
}

void TestReceiver::set_retry_after_seconds(int seconds) { set_retry_after(std::to_string(seconds)); }

void TestReceiver::set_retry_after(std::string value) {
  std::lock_guard lock(state_->mutex);
  state_->retry_after = std::move(value);
}

void TestReceiver::read_headers_as_latin1(bool on) {
  std::lock_guard lock(state_->mutex);
  state_->latin1_headers = on;
}

void TestReceiver::set_body(Failure kind, std::string body) {
  std::lock_guard lock(state_->mutex);
  state_->bodies[kind] = std::move(body);
}

void TestReceiver::set_slow_delay(std::chrono::milliseconds delay) {
  std::lock_guard lock(state_->mutex);
  state_->slow_delay = delay;
}

void TestReceiver::set_endless_chunk_interval(std::chrono::milliseconds interval) {
  std::lock_guard lock(state_->mutex);
  state_->endless_chunk_interval = interval;
}

std::optional<std::chrono::steady_clock::time_point> TestReceiver::endless_body_ended() const {
  std::lock_guard lock(state_->mutex);
  return state_->endless_body_ended;
}

void TestReceiver::hold() {
  std::lock_guard lock(state_->mutex);
  state_->holding = true;
}

void TestReceiver::release() {
  std::lock_guard lock(state_->mutex);
  state_->holding = false;
  state_->changed.notify_all();
}

void TestReceiver::release_one(const std::string& webhook_id) {
  std::lock_guard lock(state_->mutex);
  state_->released_ids.insert(webhook_id);
  state_->changed.notify_all();
}

int TestReceiver::max_held() const {
  std::lock_guard lock(state_->mutex);
  return state_->max_held;
}

bool TestReceiver::wait_for_held(int count, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(state_->mutex);
  return state_->changed.wait_for(lock, timeout, [&] { return state_->held >= count; });
}

std::vector<ReceivedRequest> TestReceiver::requests() const {
  std::lock_guard lock(state_->mutex);
  return state_->requests;
}

std::vector<std::string> TestReceiver::server_names() const {
  std::lock_guard lock(state_->mutex);
  return state_->server_names;
}

std::vector<std::string> TestReceiver::applied_bodies() const {
  std::lock_guard lock(state_->mutex);
  return state_->applied_bodies;
}

std::size_t TestReceiver::applied_count() const {
  std::lock_guard lock(state_->mutex);
  return state_->applied_ids.size();
}

int TestReceiver::max_concurrent_per_id() const {
  std::lock_guard lock(state_->mutex);
  return state_->max_concurrent_per_id;
}

bool TestReceiver::wait_for_requests(std::size_t count, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(state_->mutex);
  return state_->changed.wait_for(lock, timeout, [&] { return state_->requests.size() >= count; });
}

bool TestReceiver::wait_for_applied(std::size_t count, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(state_->mutex);
  return state_->changed.wait_for(lock, timeout, [&] { return state_->applied_ids.size() >= count; });
}

}  // namespace tidemark::testing
