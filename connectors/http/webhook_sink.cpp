#include "connectors/http/webhook_sink.hpp"

#include <algorithm>
#include <ctime>
#include <deque>
#include <functional>
#include <thread>
#include <variant>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>

#include "connectors/http/options_error.hpp"
#include "connectors/http/signature.hpp"
#include "connectors/http/tls.hpp"
#include "pipeline/core/error_text.hpp"
#include "pipeline/core/percent_encode.hpp"
#include "pipeline/core/retry_after.hpp"

namespace tidemark::connectors::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using pipeline::DeliveryResult;
using pipeline::OutboxEvent;

namespace {

constexpr std::size_t kErrorBodyExcerpt = 200;
// The most of an answer's body that is read: past it the rest is not read but dropped with
// the connection. An answer is its status; a destination that streams without end must not
// hold the delivery, nor spin a core reading.
constexpr std::uint64_t kMaxAnswerBody = 64 * 1024;

struct Target {
  std::string host;
  std::string port;
  std::string host_header;
  std::string path;  // with the query
  bool tls = false;  // https://
};

Target parse_target(const std::string& raw_url) {
  const std::string url = pipeline::redact_urls(raw_url);  // for the messages only
  const auto parsed = boost::urls::parse_uri(raw_url);
  if (!parsed) throw OptionsError("destination URL '" + url + "' is not a valid URL");
  if (parsed->scheme() != "http" && parsed->scheme() != "https") {
    throw OptionsError("destination URL '" + url + "': only http:// and https:// URLs are supported");
  }
  Target target;
  target.tls = parsed->scheme() == "https";
  target.host = parsed->host();
  if (target.host.empty()) throw OptionsError("destination URL '" + url + "' has no host");
  target.port = parsed->has_port() ? std::string(parsed->port()) : target.tls ? "443" : "80";
  target.host_header = parsed->has_port() ? target.host + ":" + target.port : target.host;
  target.path = std::string(parsed->encoded_target());
  if (target.path.empty()) target.path = "/";
  return target;
}

// A response body up to kMaxAnswerBody is read (so the connection stays usable) but only
// its first kErrorBodyExcerpt bytes are kept: a 2xx is delivered whatever it carries, and an
// error's body is only an excerpt for last_error.
struct ExcerptBody {
  struct value_type {
    std::string excerpt;
  };

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(bhttp::header<isRequest, Fields>&, value_type& body) : body_(body) {}

    void init(const boost::optional<std::uint64_t>&, beast::error_code& error) { error = {}; }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, beast::error_code& error) {
      error = {};
      std::size_t size = 0;
      for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers); ++it) {
        const asio::const_buffer buffer = *it;
        const std::size_t room = kErrorBodyExcerpt - std::min(kErrorBodyExcerpt, body_.excerpt.size());
        body_.excerpt.append(static_cast<const char*>(buffer.data()), std::min(room, buffer.size()));
        size += buffer.size();
      }
      return size;
    }

    void finish(beast::error_code& error) { error = {}; }

   private:
    value_type& body_;
  };
};

using TlsStream = beast::ssl_stream<beast::tcp_stream>;
using Stream = std::variant<beast::tcp_stream, TlsStream>;

// One kept-alive connection, plain or TLS (with the destination's one context), and the
// bytes read past the last response.
struct Connection {
  Connection(asio::io_context& io, asio::ssl::context* tls)
      : stream(tls ? Stream(std::in_place_type<TlsStream>, io, *tls)
                   : Stream(std::in_place_type<beast::tcp_stream>, io)) {}
  // The TCP layer, which carries the timeouts of both kinds.
  beast::tcp_stream& tcp() {
    return std::visit([](auto& stream) -> beast::tcp_stream& { return beast::get_lowest_layer(stream); }, stream);
  }
  Stream stream;
  beast::flat_buffer buffer;
};

// What one request/response exchange on one connection produced.
struct Exchange {
  beast::error_code error;
  std::string_view stage;        // where it failed: "resolve", "connect", "TLS handshake", "send", "receive"
  bool nothing_received = false;  // failed before any byte of an answer
  // Once the status line and headers are in, they are the answer; a body that then fails
  // to arrive whole only costs the connection.
  std::optional<bhttp::response<ExcerptBody>> response;
  bool reusable = false;
};

// The deadline of one exchange's phase, on a timer of its own: when it passes, the phase's
// operation is stopped (the resolve cancelled, the socket closed). Beast's stream timer is
// not used: every read that completes re-arms it, and against a peer that always has bytes
// ready the read won the race with the timer's handler each time, so an endless 2xx body
// was read for as long as it came.
class Deadline {
 public:
  explicit Deadline(asio::io_context& io) : timer_(io), state_(std::make_shared<State>()) {}
  ~Deadline() { disarm(); }
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

  // Calls `stop` once `limit` has passed, unless disarmed or armed again before.
  void arm(std::chrono::milliseconds limit, std::function<void()> stop) {
    disarm();
    state_->stop = std::move(stop);
    timer_.expires_after(limit);
    // The handler may already be queued when the deadline is disarmed: the generation tells.
    timer_.async_wait([state = state_, generation = state_->generation](const beast::error_code& error) {
      if (error || generation != state->generation || !state->stop) return;
      state->expired = true;
      state->stop();
    });
  }
  void disarm() {
    ++state_->generation;
    state_->stop = nullptr;
    timer_.cancel();
  }
  // `error` of an operation of the armed phase, as what it is when the deadline stopped it.
  beast::error_code why(beast::error_code error) const {
    return error && state_->expired ? beast::error_code(beast::error::timeout) : error;
  }

 private:
  struct State {
    std::uint64_t generation = 0;
    std::function<void()> stop;
    bool expired = false;
  };
  asio::steady_timer timer_;
  std::shared_ptr<State> state_;
};

bool closed_by_peer(const beast::error_code& error) {
  return error == bhttp::error::end_of_stream || error == asio::error::eof ||
         error == asio::error::connection_reset || error == asio::error::broken_pipe ||
         error == asio::ssl::error::stream_truncated;  // a TLS peer that closed without close_notify
}

}  // namespace

std::string header_id(std::string_view idempotency_key) {
  return pipeline::percent_encode(idempotency_key,
                                  [](unsigned char byte) { return byte > 0x20 && byte < 0x7F && byte != '%'; });
}

DeliveryResult classify_status(int status, std::string_view retry_after_header, std::string_view body) {
  if (status >= 200 && status < 300) return DeliveryResult::delivered();
  std::string error = "HTTP " + std::to_string(status);
  if (!body.empty()) error += ": " + pipeline::bounded_error_text(body, kErrorBodyExcerpt);
  if (status == 408 || status == 429 || status >= 500) {
    return DeliveryResult::retry(std::move(error),
                                 pipeline::parse_retry_after(retry_after_header, pipeline::kMaxRetryAfter));
  }
  if (status >= 300 && status < 400) error += " (redirects are not followed; fix the destination URL)";
  return DeliveryResult::dead(std::move(error));
}

// Runs every delivery of one destination as a coroutine on its own I/O thread; the idle
// connection pool is touched only from that thread, so it needs no lock.
class WebhookSink::Client {
 public:
  explicit Client(WebhookOptions options)
      : options_(std::move(options)),
        target_(parse_target(options_.url)),
        tls_(target_.tls ? std::optional(make_client_tls_context(options_.ca_file)) : std::nullopt),
        work_(asio::make_work_guard(io_)),
        thread_([this] { io_.run(); }) {}

  ~Client() {
    work_.reset();
    io_.stop();
    thread_.join();
  }

  // The exchange runs on this sink's thread, where its connections live; the caller resumes
  // on its own executor. A caller already on that thread (the relay: executor()) awaits it
  // directly, without a hop there and back.
  asio::awaitable<DeliveryResult> deliver(OutboxEvent event) {
    asio::awaitable<DeliveryResult> sending = send(std::move(event));  // named: not a temporary of the co_await
    const asio::any_io_executor caller = co_await asio::this_coro::executor;
    DeliveryResult result;
    if (caller == executor()) {
      result = co_await std::move(sending);
    } else {
      result = co_await asio::co_spawn(io_, std::move(sending), asio::use_awaitable);
    }
    co_return result;
  }

  asio::any_io_executor executor() { return io_.get_executor(); }

 private:
  bhttp::request<bhttp::string_body> make_request(OutboxEvent& event) const {
    const std::int64_t timestamp = std::time(nullptr);
    bhttp::request<bhttp::string_body> request{bhttp::verb::post, target_.path, 11};
    request.set(bhttp::field::host, target_.host_header);
    request.set(bhttp::field::user_agent, "tidemark-relay");
    request.set(bhttp::field::content_type, "application/json");
    // Signed as sent: receivers verify over the header they read.
    const std::string id = header_id(event.idempotency_key);
    request.set("webhook-id", id);
    request.set("webhook-timestamp", std::to_string(timestamp));
    request.set("webhook-signature", sign(options_.signing_key, id, timestamp, event.payload));
    request.set("Idempotency-Key", id);
    request.keep_alive(true);
    request.body() = std::move(event.payload);
    request.prepare_payload();
    return request;
  }

  asio::awaitable<DeliveryResult> send(OutboxEvent event) {
    auto request = make_request(event);
    std::unique_ptr<Connection> connection = take_idle();
    const bool reused = connection != nullptr;
    Exchange exchange = co_await exchange_on(connection, request);
    // A kept-alive connection the server closed meanwhile: the request never arrived, so a
    // fresh connection is tried at once instead of spending a retry on it.
    if (reused && exchange.error && exchange.nothing_received && closed_by_peer(exchange.error)) {
      connection.reset();
      exchange = co_await exchange_on(connection, request);
    }
    co_return finish(std::move(connection), exchange);
  }

  asio::awaitable<Exchange> exchange_on(std::unique_ptr<Connection>& connection,
                                        bhttp::request<bhttp::string_body>& request) {
    Exchange exchange;
    exchange.nothing_received = true;
    tcp::resolver resolver(io_);
    Deadline deadline(io_);  // after what it stops: disarmed before they go
    if (!connection) {
      connection = std::make_unique<Connection>(io_, tls_ ? &*tls_ : nullptr);
      // Resolving, connecting and the TLS handshake are connecting: connect_timeout bounds them.
      deadline.arm(options_.connect_timeout, [&] {
        resolver.cancel();
        connection->tcp().close();
      });
      const auto endpoints = co_await resolver.async_resolve(target_.host, target_.port,
                                                             asio::redirect_error(asio::use_awaitable, exchange.error));
      if ((exchange.error = deadline.why(exchange.error))) {
        exchange.stage = "resolve";
        co_return exchange;
      }
      co_await connection->tcp().async_connect(endpoints, asio::redirect_error(asio::use_awaitable, exchange.error));
      if ((exchange.error = deadline.why(exchange.error))) {
        exchange.stage = "connect";
        co_return exchange;
      }
      connection->tcp().socket().set_option(tcp::no_delay(true), exchange.error);
      if (auto* tls = std::get_if<TlsStream>(&connection->stream)) {
        exchange.error = prepare_client_handshake(tls->native_handle(), target_.host);
        if (!exchange.error) {
          co_await tls->async_handshake(asio::ssl::stream_base::client,
                                        asio::redirect_error(asio::use_awaitable, exchange.error));
        }
        if (exchange.error) {
          exchange.error = deadline.why(handshake_error(tls->native_handle(), exchange.error));
          exchange.stage = "TLS handshake";
          co_return exchange;
        }
      }
    }
    // request_timeout bounds the whole exchange: the request, the answer's head and its body.
    deadline.arm(options_.request_timeout, [&] { connection->tcp().close(); });
    co_await std::visit(
        [&](auto& stream) {
          return bhttp::async_write(stream, request, asio::redirect_error(asio::use_awaitable, exchange.error));
        },
        connection->stream);
    if ((exchange.error = deadline.why(exchange.error))) {
      exchange.stage = "send";
      co_return exchange;
    }
    bhttp::response_parser<ExcerptBody> parser;
    parser.body_limit(boost::none);  // a head that declares a long body is still the answer
    co_await std::visit(
        [&](auto& stream) {
          return bhttp::async_read_header(stream, connection->buffer, parser,
                                          asio::redirect_error(asio::use_awaitable, exchange.error));
        },
        connection->stream);
    if ((exchange.error = deadline.why(exchange.error))) {
      exchange.stage = "receive";
      exchange.nothing_received = !parser.got_some();
      co_return exchange;
    }
    exchange.nothing_received = false;
    // A body past kMaxAnswerBody (declared, chunked or up to the close), or not whole by the
    // deadline, only costs the connection.
    beast::error_code body_error = bhttp::error::body_limit;
    if (const auto length = parser.content_length(); !length || *length <= kMaxAnswerBody) {
      parser.body_limit(kMaxAnswerBody);
      co_await std::visit(
          [&](auto& stream) {
            return bhttp::async_read(stream, connection->buffer, parser,
                                     asio::redirect_error(asio::use_awaitable, body_error));
          },
          connection->stream);
    }
    exchange.reusable = !body_error && parser.get().keep_alive();
    exchange.response = parser.release();
    co_return exchange;
  }

  DeliveryResult finish(std::unique_ptr<Connection> connection, Exchange& exchange) {
    if (exchange.error) {
      if (exchange.error == beast::error::timeout) {
        const bool connecting =
            exchange.stage == "resolve" || exchange.stage == "connect" || exchange.stage == "TLS handshake";
        const auto limit = connecting ? options_.connect_timeout : options_.request_timeout;
        return DeliveryResult::retry("timed out (" + std::to_string(limit.count()) + " ms) during " +
                                     std::string(exchange.stage) + " to " + options_.url);
      }
      return DeliveryResult::retry(std::string(exchange.stage) + " " + options_.url + ": " + exchange.error.message());
    }
    const auto& response = *exchange.response;
    auto result = classify_status(static_cast<int>(response.result_int()), response[bhttp::field::retry_after],
                                  response.body().excerpt);
    if (exchange.reusable && idle_.size() < options_.max_idle_connections) idle_.push_back(std::move(connection));
    return result;
  }

  std::unique_ptr<Connection> take_idle() {
    if (idle_.empty()) return nullptr;
    auto connection = std::move(idle_.back());
    idle_.pop_back();
    return connection;
  }

  WebhookOptions options_;
  Target target_;
  std::optional<asio::ssl::context> tls_;  // https:// only; one per destination, shared by its connections
  asio::io_context io_;
  // Declared after io_ so that the sockets close before the context goes.
  std::deque<std::unique_ptr<Connection>> idle_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
};

WebhookSink::WebhookSink(WebhookOptions options) : client_(std::make_unique<Client>(std::move(options))) {}

WebhookSink::~WebhookSink() = default;

asio::awaitable<DeliveryResult> WebhookSink::deliver(OutboxEvent event) { return client_->deliver(std::move(event)); }

std::optional<asio::any_io_executor> WebhookSink::executor() const { return client_->executor(); }

}  // namespace tidemark::connectors::http
