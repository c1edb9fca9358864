#include "pipeline/db/database.hpp"

#include <unistd.h>

#include <random>
#include <thread>

#include <spdlog/spdlog.h>

#include "pipeline/backoff.hpp"
#include "sql/sql_files.hpp"

namespace tidemark::pipeline::db {

namespace {

// Any id works as long as every tidemark process uses the same one.
constexpr long long kMigrationLockId = 7406961730223;

bool transient_sqlstate(const std::string& state) {
  return state.rfind("08", 0) == 0 || state == "40001" || state == "40P01" || state == "57P01" ||
         state == "57P02" || state == "57P03" || state == "53300";
}

}  // namespace

bool is_transient(const std::exception& error) {
  if (dynamic_cast<const pqxx::broken_connection*>(&error) != nullptr) return true;
  // The commit's outcome is unknown: retrying is only safe because every batch attempt
  // first reads back what was committed (see pipeline/run/committer.cpp).
  if (dynamic_cast<const pqxx::in_doubt_error*>(&error) != nullptr) return true;
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&error)) return transient_sqlstate(sql->sqlstate());
  return false;
}

void with_retries(const RetryPolicy& policy, std::string_view what, const std::function<void()>& attempt) {
  std::mt19937_64 rng{std::random_device{}()};
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
      const auto delay = backoff_delay(policy.base_delay, policy.max_delay, number, rng);
      spdlog::warn("{}: transient database error (attempt {}/{}), retrying in {} ms: {}", what, number,
                   policy.max_attempts, delay.count(), error.what());
      std::this_thread::sleep_for(delay);
    }
  }
}

std::unique_ptr<pqxx::connection> connect(const std::string& url) {
  auto connection = std::make_unique<pqxx::connection>(url);
  pqxx::nontransaction setup(*connection);
  setup.exec("SET application_name = " + setup.quote("tidemark pid " + std::to_string(getpid())));
  setup.commit();
  return connection;
}

void migrate(pqxx::connection& connection) {
  // One transaction per migration; the advisory lock makes a second process wait and then
  // see the migration as applied, so two commands starting at once are safe.
  for (const auto& [path, text] : sql::files()) {
    if (path.rfind("migrations/", 0) != 0) continue;
    const std::string version = path.substr(std::string("migrations/").size());
    pqxx::work txn(connection);
    txn.exec("SELECT pg_advisory_xact_lock(" + std::to_string(kMigrationLockId) + ")");
    txn.exec(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, "
        "applied_at timestamptz NOT NULL DEFAULT now())");
    if (!txn.exec_params("SELECT 1 FROM schema_migrations WHERE version = $1", version).empty()) {
      txn.commit();
      continue;
    }
    spdlog::info("applying migration {}", version);
    txn.exec(text);
    txn.exec_params("INSERT INTO schema_migrations (version) VALUES ($1)", version);
    txn.commit();
  }
}

}  // namespace tidemark::pipeline::db
