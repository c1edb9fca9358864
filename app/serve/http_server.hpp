#pragma once
// The serve HTTP server: Boost.Beast over C++20 coroutines on the service's io_context.
// Each connection is one coroutine: read a request (with a timeout per operation, a body
// limit and a minimum body rate), hand it to the blocking handler on the worker pool (probes on a thread of
// their own), write the answer. Handlers that wait poll on timers, holding no thread.
// Included by service.cpp only; Beast itself stays in http_server.cpp.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include "app/serve/http_message.hpp"

namespace tidemark::app::serve {

struct HttpServerState;  // defined in http_server.cpp

struct HttpServerLimits {
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};  // per read or write of a connection
  // Open connections at once (http.max_connections); beyond it the one that has waited
  // longest for its next bytes (idle, or a head or body still arriving) is closed. When
  // every one has a whole request in hand, a few connections more answer the probes only
  // (anything else 503); beyond those, a new one is answered 503 and closed.
  std::size_t max_connections = 1024;
};

struct HttpHandlers {
  std::function<HttpResponse(const HttpRequest&)> handle;  // called on a worker thread
  // The client stalled after its header, sent its body below the minimum rate, or its body
  // read was shed to make room.
  std::function<void(const HttpRequest&)> on_timeout;
};

// Whether `listen` (HOST:PORT) binds a loopback address only, resolved as HttpServer binds
// it. Throws std::runtime_error when it cannot be resolved.
bool is_loopback_listen(const std::string& listen);

// The hosts a client of `listen` names in Host (front_door.hpp host_name's form): the host as
// written and the address it resolves to. Throws std::runtime_error when it cannot be resolved.
std::vector<std::string> listen_host_names(const std::string& listen);

class HttpServer {
 public:
  // Binds `listen` (HOST:PORT; port 0 picks a free one). Throws std::runtime_error naming
  // the address when it cannot.
  HttpServer(boost::asio::io_context& io, boost::asio::thread_pool& workers, const std::string& listen,
             HttpHandlers handlers, HttpServerLimits limits);
  ~HttpServer();

  unsigned short port() const;
  std::string address() const;  // HOST:PORT as bound
  void start();
  // Stops accepting and closes idle connections; requests in hand are answered first, then
  // their connections close. Call on the io_context's thread.
  void stop();
  // After stop(), on the io_context: completes once every connection has closed, or after
  // `grace`, when those left are closed (a read-your-writes wait answers at its next look,
  // into a closed socket).
  boost::asio::awaitable<void> drain(std::chrono::milliseconds grace);

 private:
  // /healthz, /readyz and /metrics run here, so that they answer however busy the workers are.
  boost::asio::thread_pool probes_{1};
  std::shared_ptr<HttpServerState> state_;
};

}  // namespace tidemark::app::serve
