#include "app/serve/http_server.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "app/serve/api.hpp"
#include "app/serve/front_door.hpp"
#include "pipeline/core/error.hpp"
#include "pipeline/core/log_throttle.hpp"

namespace tidemark::app::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr std::uint32_t kMaxHeaderBytes = 16 * 1024;
constexpr std::size_t kMaxDrainBytes = 1024 * 1024;
// A body must arrive at kMinBodyBytesPerSecond after a grace (declared length / rate +
// grace, capped by the timeout): a client that cannot deliver it is dropped as stalled, so
// that a trickling body holds its connection seconds, not the whole timeout. 64 KiB, the
// largest body, gets the whole default timeout.
constexpr std::chrono::milliseconds kBodyGrace{2000};
constexpr std::size_t kMinBodyBytesPerSecond = 8 * 1024;
// Connections beyond http.max_connections, for the probes only, taken when every one within
// it has a request in hand: each reads one request head within kReserveHeadTimeout and
// answers /healthz, /readyz or /metrics, anything else 503, then closes.
constexpr std::size_t kProbeReserve = 8;
constexpr std::chrono::milliseconds kReserveHeadTimeout{1000};

const std::string kBusyBody = "{\"error\":\"too many connections (http.max_connections)\"}\n";

bhttp::response<bhttp::string_body> to_beast(const HttpResponse& response, unsigned version, bool keep_alive) {
  bhttp::response<bhttp::string_body> message{static_cast<bhttp::status>(response.status), version};
  message.set(bhttp::field::server, "tidemark");
  message.set(bhttp::field::content_type, response.content_type);
  for (const auto& [name, value] : response.headers) message.set(name, value);
  message.body() = response.body;
  message.keep_alive(keep_alive);
  message.prepare_payload();
  return message;
}

// How long a body of `declared` bytes may take to arrive.
std::chrono::milliseconds body_deadline(std::uint64_t declared, std::chrono::milliseconds timeout) {
  const auto at_minimum_rate = std::chrono::milliseconds(declared * 1000 / kMinBodyBytesPerSecond);
  return std::min(timeout, kBodyGrace + at_minimum_rate);
}

}  // namespace

struct HttpServerState {
  HttpServerState(asio::io_context& io, asio::thread_pool& pool, asio::thread_pool& probe_pool,
                  HttpHandlers http_handlers, HttpServerLimits server_limits)
      : acceptor(io),
        drained(io),
        workers(pool),
        probes(probe_pool),
        handlers(std::move(http_handlers)),
        limits(server_limits) {}

  // What a connection is doing. Only a request read whole is in hand: one whose body is
  // still arriving can be shed to make room, like a connection waiting for its next request.
  enum class Phase {
    kWaiting,  // for a request's head (idle, or a head still arriving)
    kBody,     // reading a request's body
    kInHand,   // a whole request is handled, or its answer written
  };
  struct Connection {
    Phase phase = Phase::kWaiting;
    // kWaiting: since when it waits; kBody: when its body last brought bytes.
    std::chrono::steady_clock::time_point since;
    bool reserve = false;  // beyond http.max_connections: for a probe only (kProbeReserve)
    bool closing = false;  // closed to make room; its session has not ended yet

    void enter(Phase next) {
      phase = next;
      since = std::chrono::steady_clock::now();
    }
  };

  tcp::acceptor acceptor;
  // drain() waits on it; the last connection to close after stop() cancels it.
  asio::steady_timer drained;
  asio::thread_pool& workers;
  asio::thread_pool& probes;
  HttpHandlers handlers;
  HttpServerLimits limits;
  bool stopping = false;
  bool abandoned = false;  // drain() gave up on the requests still in hand
  std::map<beast::tcp_stream*, Connection> connections;
  std::size_t open = 0;      // connections within http.max_connections, not closing
  std::size_t reserved = 0;  // reserve connections, not closing
  pipeline::LogThrottle accept_errors{std::chrono::seconds(10)};
  pipeline::LogThrottle refusals{std::chrono::seconds(10)};

  HttpResponse handle(const HttpRequest& request) noexcept {
    try {
      return handlers.handle(request);
    } catch (const std::exception& error) {
      spdlog::error("{} {}: {}", request.method, request.target, error.what());
      return HttpResponse{500, "application/json", "{\"error\":\"internal error; see the server log\"}\n", {}};
    }
  }

  Connection& opened(beast::tcp_stream* stream, bool reserve) {
    Connection& connection = connections[stream];
    connection.reserve = reserve;
    connection.enter(Phase::kWaiting);
    ++count_of(connection);
    return connection;
  }

  void ended(beast::tcp_stream* stream) {
    const auto found = connections.find(stream);
    if (!found->second.closing) --count_of(found->second);
    connections.erase(found);
  }

  // Makes room among the reserve connections or the others: closes the one that has waited
  // longest for its next bytes, idle or with a head or a body still arriving (a flood of
  // trickling bodies sheds itself, and a connection just accepted is the last to go). False
  // when every one has a whole request in hand.
  bool make_room(bool reserve) {
    std::pair<beast::tcp_stream* const, Connection>* victim = nullptr;
    for (auto& entry : connections) {
      const Connection& connection = entry.second;
      if (connection.closing || connection.reserve != reserve || connection.phase == Phase::kInHand) continue;
      if (victim == nullptr || connection.since < victim->second.since) victim = &entry;
    }
    if (victim == nullptr) return false;
    --count_of(victim->second);
    victim->second.closing = true;
    beast::error_code ignored;
    victim->first->socket().close(ignored);
    return true;
  }

 private:
  std::size_t& count_of(const Connection& connection) { return connection.reserve ? reserved : open; }
};

namespace {

asio::awaitable<HttpResponse> handle_on_worker(std::shared_ptr<HttpServerState> state, HttpRequest request) {
  co_return state->handle(request);
}

// The handler's answer; a handler that waits for something (read-your-writes) answers
// `retry_after` instead and is asked again after it, on a timer that holds no thread.
asio::awaitable<HttpResponse> answer(std::shared_ptr<HttpServerState> state, const HttpRequest& request) {
  const Route route = route_of(request.target);
  // /healthz does no blocking work: answered here, it waits for nothing, not even a probe
  // lane held by a /readyz whose database does not answer.
  if (route.kind == RouteKind::kHealth) co_return state->handle(request);
  asio::thread_pool& lane = route.probe() ? state->probes : state->workers;
  asio::steady_timer timer(state->acceptor.get_executor());
  for (;;) {
    HttpResponse response = co_await asio::co_spawn(lane, handle_on_worker(state, request), asio::use_awaitable);
    if (!response.retry_after || state->abandoned) co_return response;
    timer.expires_after(*response.retry_after);
    beast::error_code ignored;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
}

// Reads the rest of a request whose head has been read, within body_deadline of its declared
// length (a chunked body counts as the largest allowed). Each read that brings bytes marks
// progress: the connection is then the last to be shed.
asio::awaitable<void> read_body(HttpServerState& state, beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                RequestParser& parser, HttpServerState::Connection& connection,
                                beast::error_code& error) {
  connection.enter(HttpServerState::Phase::kBody);
  const std::uint64_t declared = std::min<std::uint64_t>(parser.content_length().value_or(kMaxBodyBytes), kMaxBodyBytes);
  stream.expires_after(body_deadline(declared, state.limits.timeout));
  while (!error && !parser.is_done()) {
    const std::size_t parsed =
        co_await bhttp::async_read_some(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, error));
    if (parsed > 0) connection.since = std::chrono::steady_clock::now();
  }
}

asio::awaitable<void> session(std::shared_ptr<HttpServerState> state, tcp::socket socket, bool reserve) {
  beast::tcp_stream stream(std::move(socket));
  HttpServerState::Connection& connection = state->opened(&stream, reserve);
  beast::flat_buffer buffer;
  beast::error_code error;
  bool keep_alive = true;
  while (keep_alive && !state->stopping && !connection.closing) {
    RequestParser parser;
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(kMaxBodyBytes);
    connection.enter(HttpServerState::Phase::kWaiting);
    stream.expires_after(reserve ? std::min(state->limits.timeout, kReserveHeadTimeout) : state->limits.timeout);
    co_await bhttp::async_read_header(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, error));
    std::optional<std::string> refused;
    if (!error) refused = refuse_head(parser);
    // A reserve connection answers the probes only, without reading any body.
    const bool busy = !error && !refused && reserve && !route_of(parser.get().target()).probe();
    if (!error && !refused && !busy && !parser.is_done()) {
      co_await read_body(*state, stream, buffer, parser, connection, error);
    }
    const bool shed = connection.closing;
    connection.enter(HttpServerState::Phase::kInHand);
    HttpRequest request = request_head(parser);
    request.received = std::chrono::steady_clock::now();
    unsigned version = parser.get().version();
    bool drain = false;
    if (refused || busy) {
      drain = true;  // the body's framing is not trusted, or not read: answered unread, then the connection closes
      keep_alive = false;
    } else if (error == bhttp::error::body_limit) {
      drain = true;
      // Answered without reading the body (the stream cannot be resynchronised): 413.
      request.body_too_large = true;
      keep_alive = false;
    } else if (error == beast::error::timeout || (error && shed)) {
      // Stalled, too slow for its body's minimum rate, or shed for room.
      if (parser.is_header_done()) state->handlers.on_timeout(request);
      break;
    } else if (error && error.category() == bhttp::make_error_code(bhttp::error::bad_target).category() &&
               error != bhttp::error::end_of_stream && error != bhttp::error::partial_message) {
      request = HttpRequest{};
      keep_alive = false;
    } else if (error) {
      break;  // closed by the client, reset, or closed by stop()
    } else {
      request.body = std::move(parser.get().body());
      keep_alive = !reserve && parser.get().keep_alive();  // a reserve connection answers one request
    }
    HttpResponse response;
    if (request.method.empty()) {
      response = HttpResponse{400, "application/json", "{\"error\":\"malformed HTTP request\"}\n", {}};
      version = 11;
    } else if (refused) {
      response = HttpResponse{400, "application/json", boost::json::serialize(boost::json::object{{"error", *refused}}) + "\n", {}};
    } else if (busy) {
      response = HttpResponse{503, "application/json", kBusyBody, {{"Retry-After", "1"}}};
    } else {
      response = co_await answer(state, request);
    }
    keep_alive = keep_alive && !state->stopping;
    auto message = to_beast(response, version, keep_alive);
    stream.expires_after(state->limits.timeout);
    co_await bhttp::async_write(stream, message, asio::redirect_error(asio::use_awaitable, error));
    if (error) break;
    if (drain) {
      // Reads (a bounded amount of) what the client still sends before closing: closing
      // with unread data resets the connection, and the client could lose the answer.
      stream.socket().shutdown(tcp::socket::shutdown_send, error);
      std::array<char, 16 * 1024> discard;
      std::size_t drained = 0;
      stream.expires_after(std::chrono::seconds(1));
      while (!error && drained < kMaxDrainBytes) {
        drained += co_await stream.async_read_some(asio::buffer(discard), asio::redirect_error(asio::use_awaitable, error));
      }
    }
  }
  stream.socket().shutdown(tcp::socket::shutdown_send, error);
  state->ended(&stream);
  if (state->stopping && state->connections.empty()) state->drained.cancel();
}

// Beyond the cap and its reserve with every connection busy: a short 503 instead of a
// silent close.
void refuse(HttpServerState& state, tcp::socket socket) {
  static const std::string kBusy = "HTTP/1.1 503 Service Unavailable\r\nServer: tidemark\r\nContent-Type: application/json\r\n"
                                   "Connection: close\r\nRetry-After: 1\r\nContent-Length: " +
                                   std::to_string(kBusyBody.size()) + "\r\n\r\n" + kBusyBody;
  beast::error_code ignored;
  socket.non_blocking(true, ignored);
  socket.write_some(asio::buffer(kBusy), ignored);  // a fresh socket's buffer holds it; else it is lost
  // Best effort, without waiting: a close with the request unread would reset the
  // connection, and the client could lose the 503.
  std::array<char, 16 * 1024> discard;
  socket.read_some(asio::buffer(discard), ignored);
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
  if (const auto summary = state.refusals.admit()) {
    spdlog::warn("refused a connection: {} open, every one with a request in hand (http.max_connections){}",
                 state.connections.size(), *summary);
  }
}

bool out_of_descriptors(const beast::error_code& error) {
  return error == asio::error::no_descriptors || error == beast::error_code(ENFILE, boost::system::system_category());
}

asio::awaitable<void> accept_loop(std::shared_ptr<HttpServerState> state) {
  // Out of file descriptors, accepting again at once fails again at once (100% CPU): pause,
  // doubling up to a second, until an accept succeeds.
  constexpr std::chrono::milliseconds kFirstPause{10};
  constexpr std::chrono::milliseconds kLongestPause{1000};
  std::chrono::milliseconds pause = kFirstPause;
  asio::steady_timer timer(state->acceptor.get_executor());
  for (;;) {
    beast::error_code error;
    tcp::socket socket = co_await state->acceptor.async_accept(asio::redirect_error(asio::use_awaitable, error));
    if (state->stopping || !state->acceptor.is_open()) co_return;
    if (error) {
      const bool exhausted = out_of_descriptors(error);
      if (const auto summary = state->accept_errors.admit()) {
        spdlog::warn("accepting a connection: {}{}{}", error.message(),
                     exhausted ? "; pausing accepts and closing an idle or stalled connection" : "", *summary);
      }
      if (exhausted) {
        state->make_room(/*reserve=*/false);
        timer.expires_after(pause);
        pause = std::min(pause * 2, kLongestPause);
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, error));
        if (state->stopping) co_return;
      }
      continue;
    }
    pause = kFirstPause;
    bool reserve = false;
    if (state->open >= state->limits.max_connections && !state->make_room(/*reserve=*/false)) {
      // Every connection has a whole request in hand: a probe still gets in.
      if (state->reserved >= kProbeReserve && !state->make_room(/*reserve=*/true)) {
        refuse(*state, std::move(socket));
        continue;
      }
      reserve = true;
    }
    asio::co_spawn(state->acceptor.get_executor(), session(state, std::move(socket), reserve), asio::detached);
  }
}

tcp::endpoint resolve(asio::io_context& io, const std::string& listen) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) throw Error(ErrorKind::kUsage, "--listen " + listen + ": expected HOST:PORT");
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  beast::error_code error;
  tcp::resolver resolver(io);
  const auto results = resolver.resolve(host, listen.substr(colon + 1), tcp::resolver::passive, error);
  if (error || results.empty()) {
    throw Error(ErrorKind::kPermanent, "cannot resolve listen address " + listen + ": " + error.message());
  }
  return results.begin()->endpoint();
}

}  // namespace

bool is_loopback_listen(const std::string& listen) {
  asio::io_context io;
  return resolve(io, listen).address().is_loopback();
}

std::vector<std::string> listen_host_names(const std::string& listen) {
  asio::io_context io;
  const asio::ip::address address = resolve(io, listen).address();
  const std::string written = host_name(listen.substr(0, listen.rfind(':')));
  const std::string resolved = host_name(address.is_v6() ? "[" + address.to_string() + "]" : address.to_string());
  return written == resolved ? std::vector<std::string>{written} : std::vector<std::string>{written, resolved};
}

HttpServer::HttpServer(asio::io_context& io, asio::thread_pool& workers, const std::string& listen,
                       HttpHandlers handlers, HttpServerLimits limits)
    : state_(std::make_shared<HttpServerState>(io, workers, probes_, std::move(handlers), limits)) {
  const tcp::endpoint endpoint = resolve(io, listen);
  beast::error_code error;
  state_->acceptor.open(endpoint.protocol(), error);
  if (!error) state_->acceptor.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) state_->acceptor.bind(endpoint, error);
  if (!error) state_->acceptor.listen(asio::socket_base::max_listen_connections, error);
  if (error) throw Error(ErrorKind::kPermanent, "cannot listen on " + listen + ": " + error.message());
}

HttpServer::~HttpServer() = default;

unsigned short HttpServer::port() const { return state_->acceptor.local_endpoint().port(); }

std::string HttpServer::address() const {
  const auto endpoint = state_->acceptor.local_endpoint();
  const std::string host = endpoint.address().to_string();
  return (endpoint.address().is_v6() ? "[" + host + "]" : host) + ":" + std::to_string(endpoint.port());
}

void HttpServer::start() {
  asio::co_spawn(state_->acceptor.get_executor(), accept_loop(state_), asio::detached);
}

void HttpServer::stop() {
  state_->stopping = true;
  beast::error_code ignored;
  state_->acceptor.close(ignored);
  for (const auto& [stream, connection] : state_->connections) {
    if (connection.phase == HttpServerState::Phase::kWaiting) stream->socket().close(ignored);
  }
}

asio::awaitable<void> HttpServer::drain(std::chrono::milliseconds grace) {
  if (!state_->connections.empty()) {
    state_->drained.expires_after(grace);
    beast::error_code cancelled;
    co_await state_->drained.async_wait(asio::redirect_error(asio::use_awaitable, cancelled));
  }
  state_->abandoned = true;
  beast::error_code ignored;
  for (const auto& [stream, connection] : state_->connections) stream->socket().close(ignored);
}


}  // namespace tidemark::app::serve
