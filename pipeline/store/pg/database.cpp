#include "pipeline/store/pg/database.hpp"

#include <unistd.h>

#include <array>
#include <optional>
#include <random>
#include <thread>

#include <libpq-fe.h>

#include <spdlog/spdlog.h>

#include "pipeline/core/backoff.hpp"
#include "pipeline/core/log_throttle.hpp"

namespace tidemark::pipeline::db {

namespace {

bool transient_sqlstate(const std::string& state) {
  return state.rfind("08", 0) == 0 || state == "40001" || state == "40P01" || state == "57P01" ||
         state == "57P02" || state == "57P03" || state == "53300";
}

// What libpq says when the server (or libpq itself, before sending anything) refuses the
// connection for good. libpq has no SQLSTATE for a failed connection, so the text decides;
// the servers' messages at connection time are in English unless lc_messages says
// otherwise (the embedded cluster uses the C locale). Anything else, such as "Connection
// refused" while a server restarts, stays transient.
bool is_refusal(std::string_view message) {
  static constexpr std::array<std::string_view, 8> kRefusals{
      "authentication failed",          // 28P01 password, and peer/ident/SCRAM failures
      "no password supplied",           // libpq: the server wants one, neither URL nor passfile has it
      "no pg_hba.conf entry",           // 28000
      "pg_hba.conf rejects connection",  // 28000
      "does not exist",                 // 3D000 database, 28000 role
      "is not permitted to log in",     // 28000
      "permission denied for database",  // 42501: no CONNECT privilege
      "server does not support SSL",    // sslmode=require against a server without TLS
  };
  for (const auto refusal : kRefusals) {
    if (message.find(refusal) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

void check_url(const std::string& url) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (options != nullptr) {
    PQconninfoFree(options);
    return;
  }
  std::string message = error != nullptr ? error : "out of memory";
  PQfreemem(error);
  while (!message.empty() && message.back() == '\n') message.pop_back();
  throw InvalidDatabaseUrl(message);
}

bool is_transient(const std::exception& error) {
  if (dynamic_cast<const pqxx::broken_connection*>(&error) != nullptr) return true;
  // The commit's outcome is unknown: retrying is only safe because every batch attempt
  // first reads back what was committed (see pipeline/store/committer.cpp).
  if (dynamic_cast<const pqxx::in_doubt_error*>(&error) != nullptr) return true;
  // 40001 serialization failure, 40P01 deadlock, 40003 completion unknown (read back like an
  // in-doubt commit): libpqxx 6.4 derives these from transaction_rollback, not sql_error.
  if (dynamic_cast<const pqxx::transaction_rollback*>(&error) != nullptr) return true;
  // Without a SQLSTATE the error is libpq's own, not the server's: a statement that got no
  // answer, as when the server went away while a transaction was open (libpqxx 6.4 reports that
  // so, where a new transaction's BEGIN reports broken_connection).
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&error)) {
    return sql->sqlstate().empty() || transient_sqlstate(sql->sqlstate());
  }
  return false;
}

void with_retries(const RetryPolicy& policy, std::string_view what, const std::function<void()>& attempt) {
  // Seeded on the first retry only: a std::random_device per call cost the relay, which calls
  // this once per claim, 1.2% of its CPU (docs/performance.md).
  std::optional<std::mt19937_64> rng;
  for (int number = 1;; ++number) {
    try {
      attempt();
      return;
    } catch (const std::exception& error) {
      if (!is_transient(error)) throw;
      if (number >= policy.max_attempts) {
        throw RetriesExhausted(std::string(what) + " failed after " + std::to_string(number) +
                               " attempts; last error: " + error.what());
      }
      if (!rng) rng.emplace(std::random_device{}());
      const auto delay = backoff_delay(policy.base_delay, policy.max_delay, number, *rng);
      // Every thread that waits out an outage says so: one line, then one a minute with the count.
      static LogThrottle retries(std::chrono::minutes(1));
      if (const auto summary = retries.admit()) {
        spdlog::warn("{}: transient database error (attempt {}/{}), retrying in {} ms: {}{}", what, number,
                     policy.max_attempts, delay.count(), error.what(), *summary);
      } else {
        spdlog::debug("{}: transient database error (attempt {}/{}), retrying in {} ms: {}", what, number,
                      policy.max_attempts, delay.count(), error.what());
      }
      std::this_thread::sleep_for(delay);
    }
  }
}

std::string with_connect_timeout(const std::string& url) {
  const std::string setting = "connect_timeout=" + std::to_string(kConnectTimeout.count());
  if (url.starts_with("postgresql://") || url.starts_with("postgres://")) {
    const std::size_t query = url.find('?');
    if (query == std::string::npos) return url + "?" + setting;
    if (query + 1 == url.size()) return url + setting;
    return url.substr(0, query + 1) + setting + "&" + url.substr(query + 1);
  }
  return setting + " " + url;
}

std::unique_ptr<pqxx::connection> connect(const std::string& url) {
  check_url(url);
  std::unique_ptr<pqxx::connection> connection;
  try {
    connection = std::make_unique<pqxx::connection>(with_connect_timeout(url));
  } catch (const pqxx::broken_connection& error) {
    std::string message = error.what();
    while (!message.empty() && message.back() == '\n') message.pop_back();
    // libpq checks option values (port, sslmode, …) only when connecting, before it
    // contacts any server; those messages start with "invalid".
    if (message.rfind("invalid ", 0) == 0) throw InvalidDatabaseUrl(message);
    if (!is_refusal(message)) throw;
    throw ConnectionRejected("the database rejected the connection (" + message +
                            "): check the database name, the user and its password (or passfile) in the URL");
  }
  pqxx::nontransaction setup(*connection);
  std::string settings = "SET application_name = " + setup.quote("tidemark pid " + std::to_string(getpid()));
  // Tidemark's statements are written for READ COMMITTED, a snapshot per statement: a batch
  // staged ahead begins before the batch ahead of it commits, and its apply statement must see
  // that batch (docs/architecture.md, "Staging ahead"). A server or database default of
  // another level would make every such batch fail once and be retried; transactions that
  // need another level ask for it.
  settings += "; SET default_transaction_isolation = 'read committed'";
  // A backend whose client died (a killed run) notices within a second and ends its statement,
  // instead of finishing it and holding the run's locks until then (PostgreSQL 14 and later).
  if (connection->server_version() >= 140000) settings += "; SET client_connection_check_interval = 1000";
  setup.exec(settings);
  setup.commit();
  return connection;
}

Database::Database(std::string url, RetryPolicy retries, Work setup)
    : url_(std::move(url)), retries_(retries), setup_(std::move(setup)) {}

void Database::with_connection(std::string_view what, const Work& work) {
  with_retries(retries_, what, [&] { attempt(work); });
}

void Database::attempt(const Work& work) {
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

std::unique_ptr<pqxx::connection> Database::connect() const { return db::connect(url_); }

std::unique_ptr<pqxx::connection> Database::take() {
  std::unique_ptr<pqxx::connection> connection;
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      connection = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!connection || !connection->is_open()) {
    connection = db::connect(url_);
    if (setup_) setup_(*connection);
  }
  return connection;
}

void Database::give_back(std::unique_ptr<pqxx::connection> connection) {
  std::lock_guard lock(mutex_);
  idle_.push_back(std::move(connection));
}

bool is_unique_violation(const std::exception& error) {
  return dynamic_cast<const pqxx::unique_violation*>(&error) != nullptr;
}

std::int64_t delete_in_chunks(pqxx::connection& connection, std::string_view statement,
                              std::chrono::milliseconds window, std::int64_t chunk,
                              const std::function<void(std::int64_t)>& on_chunk) {
  std::int64_t deleted = 0;
  while (true) {
    pqxx::work txn(connection);
    const auto rows = static_cast<std::int64_t>(
        txn.exec_params(std::string(statement), static_cast<long long>(window.count()), static_cast<long long>(chunk))
            .affected_rows());
    txn.commit();
    deleted += rows;
    if (rows > 0 && on_chunk) on_chunk(rows);
    if (rows < chunk) return deleted;
  }
}

}  // namespace tidemark::pipeline::db
