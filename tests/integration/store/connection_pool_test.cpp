// db::Database (its pool), the one way components get a connection: made by db::connect, reused,
// replaced when broken; with_connection retries a transient failure, attempt() never does.
#include "pipeline/store/pg/database.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>

#include "pipeline/store/pg/database.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::pipeline::db {
namespace {

using testing::TestDatabase;

std::string backend_pid(pqxx::connection& connection) {
  pqxx::nontransaction txn(connection);
  return txn.exec("SELECT pg_backend_pid()")[0][0].as<std::string>();
}

// Ends the pool's connection from the server side, as a restart or an administrator would.
void terminate(const TestDatabase& db, const std::string& pid) {
  ASSERT_EQ(db.scalar("SELECT pg_terminate_backend(" + pid + ")"), "t");
}

TEST(ConnectionPool, ReusesAConnectionMadeByConnectAndSetUpOnce) {
  TestDatabase db;
  int setups = 0;
  Database pool(db.url(), kShortRetries, [&](pqxx::connection&) { ++setups; });
  std::string first;
  std::string name;
  pool.with_connection("reading the backend", [&](pqxx::connection& connection) {
    first = backend_pid(connection);
    pqxx::nontransaction txn(connection);
    name = txn.exec("SELECT current_setting('application_name')")[0][0].as<std::string>();
  });
  EXPECT_EQ(name.rfind("tidemark pid ", 0), 0u) << name;  // db::connect's, which a raw connection lacks
  std::string second;
  pool.attempt([&](pqxx::connection& connection) { second = backend_pid(connection); });
  EXPECT_EQ(second, first);
  EXPECT_EQ(setups, 1);
}

TEST(ConnectionPool, AnErrorOnAHealthyConnectionKeepsIt) {
  TestDatabase db;
  Database pool(db.url());
  std::string first;
  pool.attempt([&](pqxx::connection& connection) { first = backend_pid(connection); });
  EXPECT_THROW(pool.attempt([](pqxx::connection& connection) {
    pqxx::work txn(connection);
    txn.exec("SELECT no_such_column FROM pg_class");
  }),
               pqxx::sql_error);
  std::string second;
  pool.attempt([&](pqxx::connection& connection) { second = backend_pid(connection); });
  EXPECT_EQ(second, first);
}

TEST(ConnectionPool, ABrokenConnectionIsReplacedAndPreparedAgain) {
  TestDatabase db;
  int setups = 0;
  Database pool(db.url(), kShortRetries, [&](pqxx::connection&) { ++setups; });
  std::string first;
  pool.attempt([&](pqxx::connection& connection) { first = backend_pid(connection); });
  terminate(db, first);

  // One attempt: the failure is the caller's to retry.
  try {
    pool.attempt([&](pqxx::connection& connection) { backend_pid(connection); });
    FAIL() << "a terminated connection answered";
  } catch (const std::exception& error) {
    EXPECT_TRUE(is_transient(error)) << error.what();
  }
  std::string second;
  pool.attempt([&](pqxx::connection& connection) { second = backend_pid(connection); });
  EXPECT_NE(second, first);
  EXPECT_EQ(setups, 2);

  // with_connection retries on a new connection instead.
  terminate(db, second);
  std::string third;
  pool.with_connection("reading the backend", [&](pqxx::connection& connection) { third = backend_pid(connection); });
  EXPECT_NE(third, second);
  EXPECT_EQ(setups, 3);
}

// A process killed in the middle of a statement: its backend notices within a second that the
// client is gone (db::connect sets client_connection_check_interval) and ends, where it would
// otherwise finish the statement first, holding what its transaction locked meanwhile (a
// run's pipeline lock: docs/cli.md, "One active run per pipeline"). The statement here would
// take ten minutes.
TEST(Connect, TheSessionOfAProcessKilledDuringAStatementEndsBeforeTheStatementWould) {
  TestDatabase db;
  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    try {
      auto connection = connect(db.url());
      pqxx::nontransaction txn(*connection);
      txn.exec("SELECT pg_sleep(600)");
    } catch (...) {
    }
    _exit(1);
  }
  const bool sleeping =
      db.await_sessions(TestDatabase::sessions_of(child) + " AND state = 'active' AND query LIKE '%pg_sleep%'", 1);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(sleeping) << "the child's statement never started";
  EXPECT_TRUE(db.await_sessions_ended(child)) << "the killed process's backend still runs its statement";
}

// A database whose default isolation is another level (an administrator's choice for other
// clients): Tidemark's transactions stay READ COMMITTED, which its statements are written for.
TEST(Connect, TransactionsAreReadCommittedWhateverTheDatabasesDefault) {
  TestDatabase db;
  db.scalar("ALTER DATABASE \"" + db.name() + "\" SET default_transaction_isolation = 'serializable'");
  EXPECT_EQ(db.scalar("SHOW default_transaction_isolation"), "serializable");
  auto connection = connect(db.url());
  pqxx::work txn(*connection);
  EXPECT_EQ(txn.exec("SHOW transaction_isolation")[0][0].as<std::string>(), "read committed");
}

}  // namespace
}  // namespace tidemark::pipeline::db
