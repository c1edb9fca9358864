#pragma once
// The edge between Tidemark and libpqxx: connecting, classifying failures into "the world
// failed, retry" and "fix the code or the data", and bounded retries.
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <pqxx/pqxx>

namespace tidemark::pipeline::db {

// Transient: connection loss (class 08), serialization failure (40001), deadlock (40P01),
// admin/crash shutdown (57P01, 57P02), cannot connect now (57P03), too many connections (53300).
bool is_transient(const std::exception& error);

struct RetryPolicy {
  int max_attempts = 8;
  std::chrono::milliseconds base_delay{100};
  std::chrono::milliseconds max_delay{5000};
};

// Thrown when the retry budget is spent; the message names what was attempted.
struct RetriesExhausted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs `attempt` until it succeeds, retrying transient failures with capped, jittered
// backoff; non-transient errors propagate at once. `what` names the work in logs and errors.
void with_retries(const RetryPolicy& policy, std::string_view what, const std::function<void()>& attempt);

// Opens a connection; application_name identifies the process in pg_stat_activity.
std::unique_ptr<pqxx::connection> connect(const std::string& url);

// Applies pending migrations from sql/migrations/ in order, each in its own transaction,
// serialized across processes by an advisory lock. Safe to call from every command.
void migrate(pqxx::connection& connection);

}  // namespace tidemark::pipeline::db
