#pragma once
// An HTTP request and answer as the serve API sees them: plain values, so that routing and
// handling are testable without sockets and Beast stays inside http_server.cpp.
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tidemark::app::serve {

struct HttpRequest {
  std::string method;  // "GET", "POST", …
  std::string target;  // origin form: /v1/runs/7?x=y
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  bool body_too_large = false;  // the body exceeded the limit and was not read
  std::chrono::steady_clock::time_point received{};  // when the whole request had been read

  const std::string& header(const std::string& lower_case_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Not an answer yet: the server asks the handler again with the same request after this
  // long (a wait on a timer, occupying no worker thread).
  std::optional<std::chrono::milliseconds> retry_after;
};

}  // namespace tidemark::app::serve
