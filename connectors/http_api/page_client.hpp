#pragma once
// GETs pages from one origin (scheme, host, port) over one kept-alive connection, plain or
// TLS with the peer verified (connectors/http/tls.hpp, the webhook sink's rules), every step
// bounded by a timeout. Boost.Beast stays inside the .cpp.
#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/core/error.hpp"

namespace tidemark::connectors::http_api {

// Where requests go, from a URL: what a next page's URL must share with the first.
struct Origin {
  bool tls = false;
  std::string host;
  std::string port;
  friend bool operator==(const Origin&, const Origin&) = default;
};

// A URL split for a request; throws InvalidUrl (the message names the URL, redacted) when it
// is not an absolute http:// or https:// URL with a host.
struct RequestUrl {
  Origin origin;
  std::string target;  // path and query, "/" when empty
};
RequestUrl split_url(const std::string& url);

struct PageResponse {
  int status = 0;
  std::string retry_after;  // the Retry-After header, "" when absent
  std::string link;         // every Link header, joined with ", "
  std::string body;
};

// A URL that cannot be requested (split_url): the configuration or a server's Link is wrong.
struct InvalidUrl : tidemark::Error {
  explicit InvalidUrl(const std::string& message) : tidemark::Error(tidemark::ErrorKind::kConfig, message) {}
};

// The exchange failed below HTTP (resolve, connect, handshake, send, receive, a timeout, a
// body cut short): retryable.
struct TransportError : tidemark::Error {
  explicit TransportError(const std::string& message) : tidemark::Error(tidemark::ErrorKind::kTransient, message) {}
};

struct ClientTimeouts {
  std::chrono::milliseconds connect{5000};   // resolving, connecting and the TLS handshake
  std::chrono::milliseconds request{30000};  // sending the request and reading the whole answer
};

class PageClient {
 public:
  // `ca_file`: PEM bundle trusted for https:// instead of the system store ("" for it).
  // Throws http::OptionsError when the trust store cannot be loaded.
  PageClient(Origin origin, const std::string& ca_file, ClientTimeouts timeouts, std::size_t max_body_bytes);
  ~PageClient();
  PageClient(const PageClient&) = delete;
  PageClient& operator=(const PageClient&) = delete;

  // One GET of `target` with `headers`, on the kept-alive connection when there is one (a
  // connection the server closed meanwhile is replaced at once). `what` names the request in
  // errors (the URL, redacted). Throws TransportError, or std::length_error for an answer
  // larger than max_body_bytes (retrying cannot help).
  PageResponse get(const std::string& target, const std::vector<std::pair<std::string, std::string>>& headers,
                   const std::string& what);
  // Waits `delay` (a retry's backoff, a rate limit).
  void pause(std::chrono::milliseconds delay);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tidemark::connectors::http_api
