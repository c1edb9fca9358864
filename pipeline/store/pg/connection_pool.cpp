#include "pipeline/store/pg/connection_pool.hpp"

#include "pipeline/store/pg/database.hpp"

namespace tidemark::app::serve {

namespace {

// A request waits at most a few seconds for the database; /readyz reports the rest.
const pipeline::db::RetryPolicy kRequestRetries{3, std::chrono::milliseconds(50), std::chrono::milliseconds(500)};

}  // namespace

ConnectionPool::ConnectionPool(std::string url) : url_(std::move(url)) {}

void ConnectionPool::with_connection(std::string_view what, const std::function<void(pqxx::connection&)>& work) {
  pipeline::db::with_retries(kRequestRetries, what, [&] {
    std::unique_ptr<pqxx::connection> connection;
    {
      std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        connection = std::move(idle_.back());
        idle_.pop_back();
      }
    }
    if (!connection || !connection->is_open()) connection = pipeline::db::connect(url_);
    try {
      work(*connection);
    } catch (const pqxx::broken_connection&) {
      throw;  // dropped with `connection`
    } catch (...) {
      std::lock_guard lock(mutex_);
      idle_.push_back(std::move(connection));
      throw;
    }
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(connection));
  });
}

}  // namespace tidemark::app::serve
