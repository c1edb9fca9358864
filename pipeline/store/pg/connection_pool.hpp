#pragma once
// The one way Tidemark's components get a PostgreSQL connection (apart from the commit's
// own, see pipeline/store/committer.hpp): connections are made by db::connect, reused
// between pieces of work, dropped when broken, and transient failures are retried by one
// RetryPolicy (db::with_retries).
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <pqxx/pqxx>

#include "pipeline/store/pg/database.hpp"

namespace tidemark::pipeline::db {

// Work that someone is waiting for (an API request): a few seconds at most; /readyz reports
// the rest.
inline constexpr RetryPolicy kShortRetries{3, std::chrono::milliseconds(50), std::chrono::milliseconds(500)};

class ConnectionPool {
 public:
  using Work = std::function<void(pqxx::connection&)>;
  // `setup` runs once on every new connection (prepared statements).
  explicit ConnectionPool(std::string url, RetryPolicy retries = kShortRetries, Work setup = {});

  const std::string& url() const { return url_; }
  // Runs `work` on a pooled connection, retrying transient failures by the pool's policy
  // (RetriesExhausted when it is spent); `what` names it in logs and errors.
  void with_connection(std::string_view what, const Work& work);
  // Runs `work` once on a pooled connection; every failure propagates as thrown. For callers
  // whose retry is their own (the relay redelivers an event a view could not apply).
  void attempt(const Work& work);

 private:
  std::unique_ptr<pqxx::connection> take();
  void give_back(std::unique_ptr<pqxx::connection> connection);

  std::string url_;
  RetryPolicy retries_;
  Work setup_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
};

}  // namespace tidemark::pipeline::db
