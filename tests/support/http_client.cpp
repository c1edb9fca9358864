#include "tests/support/http_client.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <cctype>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace tidemark::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

HttpAnswer http_request(unsigned short port, const std::string& method, const std::string& target,
                        const std::map<std::string, std::string>& headers, const std::string& body,
                        std::chrono::milliseconds timeout) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  HttpAnswer answer;
  bhttp::request<bhttp::string_body> request{bhttp::string_to_verb(method), target, 11};
  request.set(bhttp::field::host, "127.0.0.1");
  request.set(bhttp::field::content_type, "application/json");
  for (const auto& [name, value] : headers) request.set(name, value);
  request.body() = body;
  request.prepare_payload();
  request.keep_alive(false);

  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  beast::flat_buffer buffer;
  stream.expires_after(timeout);
  stream.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), [&](beast::error_code error) {
    if (error) return;
    bhttp::async_write(stream, request, [&](beast::error_code error, std::size_t) {
      // The server may answer (413) without reading the body: read the answer either way.
      (void)error;
      bhttp::async_read(stream, buffer, parser, [&](beast::error_code error, std::size_t) {
        if (error) return;
        const auto& response = parser.get();
        answer.status = static_cast<int>(response.result_int());
        for (const auto& field : response) {
          std::string name(field.name_string());
          std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
          answer.headers[name] = std::string(field.value());
        }
        answer.body = response.body();
      });
    });
  });
  io.run();
  return answer;
}

RawExchange raw_exchange(unsigned short port, const std::string& bytes, std::chrono::milliseconds timeout) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  RawExchange exchange;
  std::array<char, 16 * 1024> chunk;
  std::function<void()> read_more = [&] {
    stream.async_read_some(asio::buffer(chunk), [&](beast::error_code error, std::size_t size) {
      exchange.received.append(chunk.data(), size);
      if (error) {
        exchange.closed = error != beast::error::timeout;
        return;
      }
      read_more();
    });
  };
  stream.expires_after(timeout);
  stream.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), [&](beast::error_code error) {
    if (error) return;
    asio::async_write(stream, asio::buffer(bytes), [&](beast::error_code, std::size_t) { read_more(); });
  });
  io.run();
  return exchange;
}

namespace {

// The lowest port the kernel hands out to outgoing connections and to bind(0).
unsigned short ephemeral_low() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  unsigned low = 32768;
  range >> low;
  return static_cast<unsigned short>(std::clamp(low, 2048u, 65535u));
}

}  // namespace

unsigned short free_port() {
  // A port from bind(0) lies in the ephemeral range, where every outgoing connection of the
  // tests running beside this one also takes its source port: between this return and the
  // child's bind, one of them may take it. Below that range only another free_port() can,
  // and a random start makes that rare.
  static std::mutex mutex;
  static std::mt19937 random(static_cast<unsigned>(::getpid()) ^ std::random_device{}());
  const std::lock_guard lock(mutex);
  const unsigned short high = ephemeral_low();
  const unsigned short low = high > 12000 ? 10000 : 1024;
  asio::io_context io;
  for (int attempt = 0; attempt < 200; ++attempt) {
    const auto port = static_cast<unsigned short>(std::uniform_int_distribution<unsigned>(low, high - 1u)(random));
    tcp::acceptor acceptor(io);
    boost::system::error_code error;
    acceptor.open(tcp::v4(), error);
    if (!error) acceptor.bind(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), error);
    if (!error) return port;
  }
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();
}

int connect_loopback(unsigned short port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

double metric_value(unsigned short port, const std::string& series) {
  const HttpAnswer answer = http_request(port, "GET", "/metrics");
  std::istringstream lines(answer.body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return 0;
}

}  // namespace tidemark::testing
