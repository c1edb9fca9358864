#pragma once
// A minimal blocking HTTP/1.1 client for tests of `tidemark serve`: one request per
// connection to 127.0.0.1, with a timeout.
#include <chrono>
#include <map>
#include <string>

namespace tidemark::testing {

struct HttpAnswer {
  int status = 0;  // 0 when the connection failed or timed out
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

HttpAnswer http_request(unsigned short port, const std::string& method, const std::string& target,
                        const std::map<std::string, std::string>& headers = {}, const std::string& body = "",
                        std::chrono::milliseconds timeout = std::chrono::seconds(30));

// Sends `bytes` as they are on one connection to 127.0.0.1 and returns everything the server
// sent back until it closed the connection (or `timeout` passed: `closed` says which). For
// requests no well-behaved client would send.
struct RawExchange {
  std::string received;
  bool closed = false;
};
RawExchange raw_exchange(unsigned short port, const std::string& bytes,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10));

// A plain TCP connection to 127.0.0.1:port, a file descriptor the caller closes; -1 when
// it could not connect (the kernel completes it whether or not the server accepts it).
int connect_loopback(unsigned short port);

// The value of one series (`name{labels in order}`) in serve's GET /metrics on `port`; 0 when
// the scrape does not list it (as Prometheus reads an absent counter that starts at 0).
double metric_value(unsigned short port, const std::string& series);

// A port that was free a moment ago (for child processes that take --listen).
unsigned short free_port();

}  // namespace tidemark::testing
