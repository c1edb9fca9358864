#pragma once
// Real PostgreSQL for tests: one throwaway cluster per test binary (under /tmp, loopback, a
// free port; a copy of a seed cluster that is initdb-ed once per machine), started on first
// use and removed at exit; each TestDatabase is a fresh, migrated database of its own,
// dropped when it goes out of scope.
#include <sys/types.h>

#include <memory>
#include <string>

#include <pqxx/pqxx>

#include "pipeline/store/pg/database.hpp"

namespace tidemark::testing {

class TestDatabase {
 public:
  TestDatabase();
  ~TestDatabase();
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  const std::string& url() const { return url_; }
  const std::string& name() const { return name_; }
  // This database as the product's handle (a pool, short retries): what a Committer, a run
  // request or a partition worker is given.
  pipeline::db::Database& database() const { return *database_; }
  // A new connection to this database (Database::connect).
  std::unique_ptr<pqxx::connection> connect() const;
  // Runs a query and returns the first column of the first row as text ("" for NULL).
  std::string scalar(const std::string& sql) const;
  // Waits (up to 30 s) until `count` sessions of pg_stat_activity match `where` (an SQL
  // condition); false if they never do.
  bool await_sessions(const std::string& where, int count) const;
  // The same until none does. A backend that was signalled lives on until the statement it
  // runs reaches a point where it checks, holding its locks.
  bool await_no_session(const std::string& where) const { return await_sessions(where, 0); }
  // The same for the sessions of the tidemark process `pid`: a crashed run's backend holds the
  // pipeline's lock until it ends, and a run started before then exits 1, "already running".
  bool await_sessions_ended(pid_t pid) const { return await_no_session(sessions_of(pid)); }
  // The condition on pg_stat_activity that matches the sessions of the tidemark process `pid`
  // (db::connect names them 'tidemark pid <pid>').
  static std::string sessions_of(pid_t pid) { return "application_name = 'tidemark pid " + std::to_string(pid) + "'"; }
  // pg_ctl stop -m immediate / start of the shared cluster (database fault tests).
  static void crash_cluster();
  static void restart_cluster();

 private:
  std::string name_;
  std::string url_;
  std::unique_ptr<pipeline::db::Database> database_;
};

}  // namespace tidemark::testing
