#pragma once
// Real PostgreSQL for tests: one throwaway cluster per test binary (under /tmp, loopback, a
// free port; a copy of a seed cluster that is initdb-ed once per machine), started on first
// use and removed at exit; each TestDatabase is a fresh, migrated database of its own,
// dropped when it goes out of scope.
#include <sys/types.h>

#include <memory>
#include <string>

#include <pqxx/pqxx>

namespace tidemark::testing {

class TestDatabase {
 public:
  TestDatabase();
  ~TestDatabase();
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  const std::string& url() const { return url_; }
  const std::string& name() const { return name_; }
  // A new connection to this database.
  std::unique_ptr<pqxx::connection> connect() const;
  // Runs a query and returns the first column of the first row as text ("" for NULL).
  std::string scalar(const std::string& sql) const;
  // Waits (up to 30 s) until the database sessions of the tidemark process `pid` have ended;
  // false if they did not. A killed process's backend lives on until the statement it runs
  // ends, holding the pipeline's lock: a run started before then exits 1, "already running".
  bool await_sessions_ended(pid_t pid) const;
  // pg_ctl stop -m immediate / start of the shared cluster (database fault tests).
  static void crash_cluster();
  static void restart_cluster();

 private:
  std::string name_;
  std::string url_;
};

}  // namespace tidemark::testing
