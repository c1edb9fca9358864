#include "app/serve/http_server.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <stdexcept>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include "app/serve/api.hpp"

namespace tidemark::app::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr std::uint32_t kMaxHeaderBytes = 16 * 1024;
constexpr std::size_t kMaxDrainBytes = 1024 * 1024;

using Parser = bhttp::request_parser<bhttp::string_body>;

// Method, target and headers of what the parser has seen so far (also after a body error).
HttpRequest request_head(const Parser& parser) {
  const auto& message = parser.get();
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  for (const auto& field : message) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    request.headers[name] = std::string(field.value());
  }
  return request;
}

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

}  // namespace

struct HttpServerState {
  HttpServerState(asio::io_context& io, asio::thread_pool& pool, HttpHandlers http_handlers, std::chrono::milliseconds limit)
      : acceptor(io), workers(pool), handlers(std::move(http_handlers)), timeout(limit) {}

  tcp::acceptor acceptor;
  asio::thread_pool& workers;
  HttpHandlers handlers;
  std::chrono::milliseconds timeout;
  bool stopping = false;
  // Open connections, and whether each is between requests (closed at once on stop).
  std::map<beast::tcp_stream*, bool> connections;

  HttpResponse handle(const HttpRequest& request) noexcept {
    try {
      return handlers.handle(request);
    } catch (const std::exception& error) {
      spdlog::error("{} {}: {}", request.method, request.target, error.what());
      return HttpResponse{500, "application/json", "{\"error\":\"internal error; see the server log\"}\n", {}};
    }
  }
};

namespace {

asio::awaitable<HttpResponse> handle_on_worker(std::shared_ptr<HttpServerState> state, HttpRequest request) {
  co_return state->handle(request);
}

asio::awaitable<void> session(std::shared_ptr<HttpServerState> state, tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  state->connections[&stream] = true;
  beast::flat_buffer buffer;
  beast::error_code error;
  bool keep_alive = true;
  while (keep_alive && !state->stopping) {
    Parser parser;
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(kMaxBodyBytes);
    state->connections[&stream] = true;
    stream.expires_after(state->timeout);
    co_await bhttp::async_read_header(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, error));
    state->connections[&stream] = false;
    if (!error && !parser.is_done()) {
      stream.expires_after(state->timeout);
      co_await bhttp::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, error));
    }
    HttpRequest request = request_head(parser);
    unsigned version = parser.get().version();
    bool drain = false;
    if (error == bhttp::error::body_limit) {
      drain = true;
      // Answered without reading the body (the stream cannot be resynchronised): 413.
      request.body_too_large = true;
      keep_alive = false;
    } else if (error == beast::error::timeout) {
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
      keep_alive = parser.get().keep_alive();
    }
    HttpResponse response;
    if (request.method.empty()) {
      response = HttpResponse{400, "application/json", "{\"error\":\"malformed HTTP request\"}\n", {}};
      version = 11;
    } else {
      response = co_await asio::co_spawn(state->workers, handle_on_worker(state, std::move(request)), asio::use_awaitable);
    }
    keep_alive = keep_alive && !state->stopping;
    auto message = to_beast(response, version, keep_alive);
    stream.expires_after(state->timeout);
    co_await bhttp::async_write(stream, message, asio::redirect_error(asio::use_awaitable, error));
    if (error) break;
    if (drain) {
      // Reads (a bounded amount of) what the client still sends before closing: closing
      // with unread data resets the connection, and the client could lose the 413.
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
  state->connections.erase(&stream);
}

asio::awaitable<void> accept_loop(std::shared_ptr<HttpServerState> state) {
  for (;;) {
    beast::error_code error;
    tcp::socket socket = co_await state->acceptor.async_accept(asio::redirect_error(asio::use_awaitable, error));
    if (state->stopping || !state->acceptor.is_open()) co_return;
    if (error) {
      spdlog::warn("accepting a connection: {}", error.message());
      continue;
    }
    asio::co_spawn(state->acceptor.get_executor(), session(state, std::move(socket)), asio::detached);
  }
}

tcp::endpoint resolve(asio::io_context& io, const std::string& listen) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) throw std::runtime_error("--listen " + listen + ": expected HOST:PORT");
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  beast::error_code error;
  tcp::resolver resolver(io);
  const auto results = resolver.resolve(host, listen.substr(colon + 1), tcp::resolver::passive, error);
  if (error || results.empty()) {
    throw std::runtime_error("cannot resolve listen address " + listen + ": " + error.message());
  }
  return results.begin()->endpoint();
}

}  // namespace

HttpServer::HttpServer(asio::io_context& io, asio::thread_pool& workers, const std::string& listen,
                       HttpHandlers handlers, std::chrono::milliseconds timeout)
    : state_(std::make_shared<HttpServerState>(io, workers, std::move(handlers), timeout)) {
  const tcp::endpoint endpoint = resolve(io, listen);
  beast::error_code error;
  state_->acceptor.open(endpoint.protocol(), error);
  if (!error) state_->acceptor.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) state_->acceptor.bind(endpoint, error);
  if (!error) state_->acceptor.listen(asio::socket_base::max_listen_connections, error);
  if (error) throw std::runtime_error("cannot listen on " + listen + ": " + error.message());
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
  for (const auto& [stream, idle] : state_->connections) {
    if (idle) stream->socket().close(ignored);
  }
}

std::size_t HttpServer::open_connections() const { return state_->connections.size(); }

}  // namespace tidemark::app::serve
