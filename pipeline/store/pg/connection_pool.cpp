#include "pipeline/store/pg/connection_pool.hpp"

namespace tidemark::pipeline::db {

ConnectionPool::ConnectionPool(std::string url, RetryPolicy retries, Work setup)
    : url_(std::move(url)), retries_(retries), setup_(std::move(setup)) {}

void ConnectionPool::with_connection(std::string_view what, const Work& work) {
  with_retries(retries_, what, [&] { attempt(work); });
}

void ConnectionPool::attempt(const Work& work) {
  auto connection = take();
  try {
    work(*connection);
  } catch (const pqxx::broken_connection&) {
    throw;  // dropped with `connection`
  } catch (...) {
    give_back(std::move(connection));
    throw;
  }
  give_back(std::move(connection));
}

std::unique_ptr<pqxx::connection> ConnectionPool::take() {
  std::unique_ptr<pqxx::connection> connection;
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      connection = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!connection || !connection->is_open()) {
    connection = connect(url_);
    if (setup_) setup_(*connection);
  }
  return connection;
}

void ConnectionPool::give_back(std::unique_ptr<pqxx::connection> connection) {
  std::lock_guard lock(mutex_);
  idle_.push_back(std::move(connection));
}

}  // namespace tidemark::pipeline::db
