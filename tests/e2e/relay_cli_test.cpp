// `tidemark relay` and `tidemark outbox` as real processes against a real PostgreSQL and a
// real HTTP receiver: crash points, dead letters and re-driving them.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/support/change_log.hpp"
#include "tests/support/test_database.hpp"
#include "tests/support/test_receiver.hpp"

namespace tidemark {
namespace {

using namespace std::chrono_literals;
using testing::Failure;
using testing::TestDatabase;
using testing::TestReceiver;

constexpr char kSecret[] = "whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ=";
constexpr char kSecretEnv[] = "TIDEMARK_E2E_LEDGER_SECRET";

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

Outcome run(const std::string& arguments, const std::string& environment = "") {
  const std::string command = environment + " " + TIDEMARK_BINARY + " " + arguments + " 2>&1";
  Outcome outcome;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return outcome;
  char buffer[4096];
  while (const std::size_t read = fread(buffer, 1, sizeof buffer, pipe)) outcome.output.append(buffer, read);
  const int status = pclose(pipe);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return outcome;
}

class RelayCli : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv(kSecretEnv, kSecret, 1);
    folder_ = std::filesystem::temp_directory_path() / ("tidemark-relay-e2e-" + std::to_string(getpid()) + "-" +
                                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(folder_ / "in");
    std::ofstream(folder_ / "config.yaml")
        << "pipelines:\n"
        << "  transactions:\n"
        << "    source: {kind: file, path: " << (folder_ / "in").string() << ", format: csv}\n"
        << "    destinations:\n"
        << "      - {name: ledger, kind: http, url: " << receiver_.url() << ", secret_env: " << kSecretEnv << "}\n"
        << "relay: {max_attempts: 5, base_delay: 10ms, max_delay: 50ms, connect_timeout: 500ms, "
           "request_timeout: 500ms}\n";
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  std::string options() const {
    return "--config " + (folder_ / "config.yaml").string() + " --database '" + db_.url() + "'";
  }

  // An event of transaction_id's revision 1 for ledger (idempotency key 'ledger:<id>:1'), the
  // next of `account`'s stream.
  void insert_event(const std::string& transaction_id, const std::string& account) {
    const std::string payload = R"({"transaction_id":")" + transaction_id +
                                R"(","source_revision":1,"amount":"5.00","previous_amount":null,"account_id":")" +
                                account + R"("})";
    auto connection = db_.connect();
    pqxx::work txn(*connection);
    testing::append_change(txn, {"ledger"}, account, transaction_id + ":1", payload);
    txn.commit();
  }

  std::string status_of(const std::string& transaction_id) const {
    return db_.scalar("SELECT status || ' ' || attempts FROM outbox WHERE idempotency_key = 'ledger:" +
                      transaction_id + ":1'");
  }

  TestDatabase db_;
  TestReceiver receiver_{kSecret};
  std::filesystem::path folder_;
};

TEST_F(RelayCli, OnceDeliversEverythingDueAndExits) {
  insert_event("t1", "a");
  insert_event("t2", "a");
  insert_event("t3", "b");

  const auto outcome = run("relay --once " + options());

  ASSERT_EQ(outcome.exit_code, 0) << outcome.output;
  EXPECT_EQ(receiver_.applied_count(), 3u);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM outbox WHERE status = 'delivered'"), "3");
}

TEST_F(RelayCli, KilledAfterSendIsRedeliveredWithTheSameKeyAndAppliedOnce) {
  insert_event("t1", "a");

  const auto killed = run("relay --once " + options(), "TIDEMARK_FAILPOINTS=relay_after_send");
  ASSERT_EQ(killed.exit_code, 137) << killed.output;
  EXPECT_EQ(receiver_.applied_count(), 1u);
  // The 2xx was never recorded: the event is pending, its attempt in flight counted
  // (migrations/0029_change_log.sql; before, the attempts shown left out the one in flight).
  EXPECT_EQ(status_of("t1"), "pending 1") << "the 2xx was never recorded";
  // The lease of that attempt is on the key's cursor.
  EXPECT_EQ(db_.scalar("SELECT head_attempts || ' ' || head_leased FROM tidemark_cursor "
                       "WHERE destination = 'ledger' AND partition_key = 'a'"),
            "1 true");

  // The dead relay's lease (2 s here) runs out; the restarted relay sends the event again.
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (status_of("t1") != "delivered 2" && std::chrono::steady_clock::now() < deadline) {
    const auto restarted = run("relay --once " + options());
    ASSERT_EQ(restarted.exit_code, 0) << restarted.output;
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(status_of("t1"), "delivered 2");
  const auto requests = receiver_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].webhook_id, "ledger:t1:1");
  EXPECT_EQ(requests[1].webhook_id, requests[0].webhook_id);
  EXPECT_EQ(requests[1].body, requests[0].body);
  EXPECT_TRUE(requests[1].signature_valid);
  EXPECT_EQ(receiver_.applied_count(), 1u);
}

TEST_F(RelayCli, KilledAfterMarkDoesNotSendAgain) {
  insert_event("t1", "a");

  const auto killed = run("relay --once " + options(), "TIDEMARK_FAILPOINTS=relay_after_mark");
  ASSERT_EQ(killed.exit_code, 137) << killed.output;
  EXPECT_EQ(status_of("t1"), "delivered 1");
  const auto restarted = run("relay --once " + options());
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output;

  EXPECT_EQ(receiver_.requests().size(), 1u);
}

TEST_F(RelayCli, DeadEventIsListedAndRetryAllDeadRedrivesIt) {
  receiver_.fail_next(Failure::kBadRequest);
  insert_event("t1", "a");
  insert_event("t2", "b");
  receiver_.fail_next(Failure::kBadRequest);

  ASSERT_EQ(run("relay --once " + options()).exit_code, 0);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM outbox WHERE status = 'dead' AND attempts = 1"), "2");

  const auto listed = run("outbox list --status dead --destination ledger " + options());
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_NE(listed.output.find("ledger:t1:1"), std::string::npos) << listed.output;
  EXPECT_NE(listed.output.find("ledger:t2:1"), std::string::npos) << listed.output;
  EXPECT_NE(listed.output.find("HTTP 400"), std::string::npos) << listed.output;

  const auto retried = run("outbox retry --all-dead " + options());
  ASSERT_EQ(retried.exit_code, 0) << retried.output;
  EXPECT_NE(retried.output.find("2 dead event(s) re-driven"), std::string::npos) << retried.output;
  ASSERT_EQ(run("relay --once " + options()).exit_code, 0);

  EXPECT_EQ(db_.scalar("SELECT count(*) FROM outbox WHERE status = 'delivered'"), "2");
  EXPECT_EQ(receiver_.applied_count(), 2u);
}

TEST_F(RelayCli, RetryOfOneEventRedrivesItAndUnknownIdIsAUsageError) {
  receiver_.fail_next(Failure::kBadRequest);
  insert_event("t1", "a");
  ASSERT_EQ(run("relay --once " + options()).exit_code, 0);
  const std::string id = db_.scalar("SELECT id FROM outbox");

  const auto retried = run("outbox retry " + id + " " + options());
  ASSERT_EQ(retried.exit_code, 0) << retried.output;
  ASSERT_EQ(run("relay --once " + options()).exit_code, 0);
  EXPECT_EQ(status_of("t1"), "delivered 1");

  const auto unknown = run("outbox retry 999999 " + options());
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("999999"), std::string::npos) << unknown.output;
}

TEST_F(RelayCli, WithoutOnceKeepsDeliveringNewEventsUntilSigterm) {
  const std::string config = (folder_ / "config.yaml").string();
  const std::string url = db_.url();
  const char* argv[] = {TIDEMARK_BINARY, "relay", "--config", config.c_str(), "--database", url.c_str(), nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, TIDEMARK_BINARY, nullptr, nullptr, const_cast<char**>(argv), environ), 0);

  insert_event("t1", "a");
  EXPECT_TRUE(receiver_.wait_for_applied(1, 10s));
  insert_event("t2", "a");
  EXPECT_TRUE(receiver_.wait_for_applied(2, 10s)) << "a running relay picks up events committed later";

  kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM outbox WHERE status = 'delivered'"), "2");
}

// `ps` shows every argument: a password given with --database draws a warning naming the
// safer places, in the URL form and in the key=value form; a URL without one does not.
TEST_F(RelayCli, DatabaseUrlWithAPasswordDrawsAWarning) {
  // The test cluster's URL names its passfile (postgresql://postgres@127.0.0.1:PORT/DB?passfile=F);
  // the same password written into the URL works, and draws the warning.
  const std::string url = db_.url();
  const auto slash = url.find('/', url.find('@'));
  const auto colon = url.rfind(':', slash);
  const std::string port = url.substr(colon + 1, slash - colon - 1);
  std::ifstream passfile(url.substr(url.find("passfile=") + 9));
  std::string line;
  std::getline(passfile, line);
  const std::string password = line.substr(line.rfind(':') + 1);
  ASSERT_FALSE(password.empty()) << url;
  const std::string with_password =
      "postgresql://postgres:" + password + "@127.0.0.1:" + port + "/" + db_.name();
  const std::string keywords =
      "'host=127.0.0.1 port=" + port + " dbname=" + db_.name() + " user=postgres password=" + password + "'";
  for (const std::string& database : {with_password, keywords}) {
    SCOPED_TRACE(database);
    const auto outcome = run("outbox list --database " + database);
    EXPECT_EQ(outcome.exit_code, 0) << outcome.output;
    EXPECT_NE(outcome.output.find("--database carries a password"), std::string::npos) << outcome.output;
    EXPECT_NE(outcome.output.find("TIDEMARK_DATABASE_URL"), std::string::npos) << outcome.output;
    EXPECT_NE(outcome.output.find("passfile"), std::string::npos) << outcome.output;
  }
  const auto plain = run("outbox list --database '" + url + "'");
  EXPECT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(plain.output.find("carries a password"), std::string::npos) << plain.output;
}

TEST_F(RelayCli, RelayWithoutConfigOrSecretIsAUsageError) {
  const auto no_config = run("relay --once --database '" + db_.url() + "'");
  EXPECT_EQ(no_config.exit_code, 2) << no_config.output;
  EXPECT_NE(no_config.output.find("--config"), std::string::npos) << no_config.output;

  const auto no_secret = run("relay --once " + options(), std::string(kSecretEnv) + "=");
  EXPECT_EQ(no_secret.exit_code, 2) << no_secret.output;
  EXPECT_NE(no_secret.output.find(kSecretEnv), std::string::npos) << no_secret.output;
}

}  // namespace
}  // namespace tidemark
