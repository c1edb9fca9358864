#pragma once
// The edge between Tidemark and libpqxx: connecting, classifying failures into "the world
// failed, retry" and "fix the code or the data", bounded retries, and db::Database, the one
// handle components are given instead of a URL (apart from the commit's own sessions, see
// pipeline/store/committer.hpp).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <pqxx/pqxx>

#include "pipeline/core/error.hpp"

namespace tidemark::pipeline::db {

// Transient: connection loss (a broken connection, class 08), serialization failure (40001),
// deadlock (40P01), admin/crash shutdown (57P01, 57P02), cannot connect now (57P03), too
// many connections (53300), an error libpq raises without a SQLSTATE (a statement that got no
// answer). Never transient: a malformed URL (InvalidDatabaseUrl) or a
// server that rejects us (ConnectionRejected): retrying cannot fix either.
bool is_transient(const std::exception& error);

// The URL (or key=value string) is not one libpq can parse; the message says where.
struct InvalidDatabaseUrl : tidemark::Error {
  explicit InvalidDatabaseUrl(const std::string& message) : tidemark::Error(tidemark::ErrorKind::kConfig, message) {}
};

// The server answered and rejected us: unknown database or role, failed authentication, no
// pg_hba.conf entry, no CONNECT privilege.
struct ConnectionRejected : tidemark::Error {
  explicit ConnectionRejected(const std::string& message) : tidemark::Error(tidemark::ErrorKind::kPermanent, message) {}
};

// Throws InvalidDatabaseUrl unless libpq can parse `url`.
void check_url(const std::string& url);

struct RetryPolicy {
  int max_attempts = 8;
  std::chrono::milliseconds base_delay{100};
  std::chrono::milliseconds max_delay{5000};
};

// Thrown when the retry budget is spent; the message names what was attempted.
struct RetriesExhausted : tidemark::Error {
  explicit RetriesExhausted(const std::string& message) : tidemark::Error(tidemark::ErrorKind::kTransient, message) {}
};

// Runs `attempt` until it succeeds, retrying transient failures with capped, jittered
// backoff; non-transient errors propagate at once. `what` names the work in logs and errors.
void with_retries(const RetryPolicy& policy, std::string_view what, const std::function<void()>& attempt);

// How long a connection attempt may take, per host, unless the URL sets libpq's own
// connect_timeout: without a bound, a host that accepts the TCP connection and never answers
// holds the caller for ever (the relay's database threads and its stop(), a run, serve).
inline constexpr std::chrono::seconds kConnectTimeout{10};

// `url` with libpq's connect_timeout set to kConnectTimeout ahead of its own settings, so
// that a connect_timeout the URL sets wins (libpq keeps a setting's last value).
std::string with_connect_timeout(const std::string& url);

// Opens a connection (bounded by with_connect_timeout); application_name identifies the
// process in pg_stat_activity, and the server checks every second, during a statement, that
// the process is still there. InvalidDatabaseUrl or ConnectionRejected for permanent
// failures (see is_transient).
std::unique_ptr<pqxx::connection> connect(const std::string& url);

// Work that someone is waiting for (an API request): a few seconds at most; /readyz reports
// the rest.
inline constexpr RetryPolicy kShortRetries{3, std::chrono::milliseconds(50), std::chrono::milliseconds(500)};

// One database: where it is, how its transient failures are retried, and a pool of its
// connections, reused between pieces of work and dropped when broken. Thread-safe.
class Database {
 public:
  using Work = std::function<void(pqxx::connection&)>;
  // `setup` runs once on every new pooled connection (prepared statements).
  explicit Database(std::string url, RetryPolicy retries = kShortRetries, Work setup = {});
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& url() const { return url_; }
  const RetryPolicy& retries() const { return retries_; }
  // Runs `work` on a pooled connection, retrying transient failures by the policy
  // (RetriesExhausted when it is spent); `what` names it in logs and errors.
  void with_connection(std::string_view what, const Work& work);
  // Runs `work` once on a pooled connection; every failure propagates as thrown. For callers
  // whose retry is their own (the relay redelivers an event a view could not apply).
  void attempt(const Work& work);
  // A connection of the caller's own, not pooled and not retried (db::connect): for a session
  // whose state outlives one piece of work (session locks, LISTEN, a long read) or a command
  // that reports the first failure as it is.
  std::unique_ptr<pqxx::connection> connect() const;

 private:
  std::unique_ptr<pqxx::connection> take();
  void give_back(std::unique_ptr<pqxx::connection> connection);

  std::string url_;
  RetryPolicy retries_;
  Work setup_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
};

// A unique constraint refused a row (SQLSTATE 23505): callers above the store ask this
// rather than catch pqxx's exception class.
bool is_unique_violation(const std::exception& error);

// Retention's delete by a time index: runs `statement` (it deletes at most $2 rows older than
// $1 milliseconds) one transaction at a time, so that no lock is held for long, until a chunk
// deletes fewer than `chunk` rows; `on_chunk` (may be empty) gets each committed chunk's count.
// Returns how many rows were deleted.
std::int64_t delete_in_chunks(pqxx::connection& connection, std::string_view statement,
                              std::chrono::milliseconds window, std::int64_t chunk,
                              const std::function<void(std::int64_t)>& on_chunk);

}  // namespace tidemark::pipeline::db
