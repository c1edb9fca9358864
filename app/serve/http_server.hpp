#pragma once
// The serve HTTP server: Boost.Beast over C++20 coroutines on the service's io_context.
// Each connection is one coroutine: read a request (with a timeout per operation and a
// body limit), hand it to the blocking handler on the worker pool, write the answer.
// Included by service.cpp only; Beast itself stays in http_server.cpp.
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include "app/serve/http_message.hpp"

namespace tidemark::app::serve {

struct HttpServerState;  // defined in http_server.cpp

struct HttpHandlers {
  std::function<HttpResponse(const HttpRequest&)> handle;  // called on a worker thread
  std::function<void(const HttpRequest&)> on_timeout;      // the client stalled after its header
};

class HttpServer {
 public:
  // Binds `listen` (HOST:PORT; port 0 picks a free one). Throws std::runtime_error naming
  // the address when it cannot.
  HttpServer(boost::asio::io_context& io, boost::asio::thread_pool& workers, const std::string& listen,
             HttpHandlers handlers, std::chrono::milliseconds timeout);
  ~HttpServer();

  unsigned short port() const;
  std::string address() const;  // HOST:PORT as bound
  void start();
  // Stops accepting and closes idle connections; requests in hand are answered first, then
  // their connections close. Call on the io_context's thread.
  void stop();
  std::size_t open_connections() const;

 private:
  std::shared_ptr<HttpServerState> state_;
};

}  // namespace tidemark::app::serve
