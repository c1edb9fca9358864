#pragma once
// Database connections for the serve API's worker threads: reused between requests, a
// broken one is dropped, transient failures are retried a few times (a request is short).
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <pqxx/pqxx>

namespace tidemark::app::serve {

class ConnectionPool {
 public:
  explicit ConnectionPool(std::string url);

  const std::string& url() const { return url_; }
  // Runs `work` on a pooled connection; `what` names it in errors.
  void with_connection(std::string_view what, const std::function<void(pqxx::connection&)>& work);

 private:
  std::string url_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
};

}  // namespace tidemark::app::serve
