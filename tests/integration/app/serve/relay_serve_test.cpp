// The outbox relay inside `tidemark serve`: it never ends silently.
// An unexpected error restarts it with backoff, counted in tidemark_component_restarts_total,
// and /readyz answers 503 meanwhile; every labelled counter starts at zero.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <chrono>
#include <future>
#include <iostream>
#include <thread>

#include <boost/asio/post.hpp>

#include "app/serve/service.hpp"
#include "tests/support/change_log.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/test_database.hpp"
#include "tests/support/test_receiver.hpp"

namespace tidemark::app::serve {
namespace {

using namespace std::chrono_literals;
using testing::http_request;
using testing::TestDatabase;
using testing::TestReceiver;

constexpr char kSecret[] = "whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ=";  // "tidemark-test-secret"
constexpr char kSecretEnv[] = "TIDEMARK_RELAY_SERVE_TEST_SECRET";

class RelayInServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv(kSecretEnv, kSecret, 1);
    const std::string yaml = std::string("pipelines:\n  transactions:\n    source: {path: /nonexistent.csv}\n") +
                             "    destinations:\n      - {name: hooks, kind: http, url: " + receiver_.url() +
                             ", secret_env: " + kSecretEnv + "}\n" +
                             "relay: {base_delay: 10ms, max_delay: 50ms}\n";
    ServeOptions options;
    options.config = app::config::parse_config(yaml, "relay-serve-test.yaml");
    options.database_url = db_.url();
    options.listen = "127.0.0.1:0";
    service_ = std::make_unique<Service>(std::move(options));
    port_ = service_->port();
    thread_ = std::thread([this] { service_->run(); });
  }

  void TearDown() override {
    service_->request_stop();
    thread_.join();
  }

  std::string metrics() { return http_request(port_, "GET", "/metrics").body; }

  // Waits until `condition` holds (the relay works on its own thread); false on timeout.
  template <class Condition>
  bool eventually(Condition condition, std::chrono::milliseconds timeout = 20s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }

  // One event of destination hooks, its key ("hooks:<name>") the only one of its partition.
  void insert_event(const std::string& name) {
    auto connection = db_.connect();
    pqxx::work txn(*connection);
    testing::append_change(txn, {"hooks"}, name, name, "{}");
    txn.commit();
  }

  TestDatabase db_;
  TestReceiver receiver_{kSecret};
  std::unique_ptr<Service> service_;
  unsigned short port_ = 0;
  std::thread thread_;
};

TEST_F(RelayInServeTest, EveryRelaySeriesIsExportedAtZeroFromTheStart) {
  const std::string text = metrics();
  for (const char* result : {"delivered", "retry", "dead"}) {
    EXPECT_NE(text.find(std::string(R"(tidemark_outbox_deliveries_total{destination="hooks",result=")") + result +
                        "\"} 0"),
              std::string::npos)
        << result << "\n"
        << text;
  }
  EXPECT_NE(text.find(R"(tidemark_component_restarts_total{component="relay"} 0)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(tidemark_records_total{entity="transaction",outcome="superseded",pipeline="transactions"} 0)"), std::string::npos);
}

// The relay's loop runs on serve's io_context: while a job holds that io_context's one thread,
// a due event is not delivered (a relay on a thread of its own would deliver it within its
// 500 ms poll); once the thread is free again, it is.
TEST_F(RelayInServeTest, RelayRunsOnServesIoContext) {
  ASSERT_TRUE(eventually([&] { return http_request(port_, "GET", "/readyz").status == 200; }));
  std::promise<void> holding;
  std::promise<void> release;
  auto released = release.get_future().share();
  boost::asio::post(service_->io_context(), [&holding, released] {
    holding.set_value();
    released.wait();
  });
  holding.get_future().wait();
  insert_event("held");
  const bool delivered_while_held = receiver_.wait_for_applied(1, 3s);
  release.set_value();
  EXPECT_FALSE(delivered_while_held) << "the relay delivered while serve's io_context was held";
  EXPECT_TRUE(receiver_.wait_for_applied(1, 20s)) << "the relay does not deliver once the io_context is free";
}

// A real unexpected error: the relay's cursors (tidemark_cursor, which its claim reads) go away
// under it (undefined_table is not a transient database error). The relay restarts with backoff, readiness reports it,
// and once the table is back it delivers again.
TEST_F(RelayInServeTest, RelayIsRestartedAfterAnUnexpectedErrorAndReadyzIs503Meanwhile) {
  insert_event("first");
  ASSERT_TRUE(receiver_.wait_for_applied(1, 20s));
  EXPECT_TRUE(eventually([&] { return http_request(port_, "GET", "/readyz").status == 200; }));
  // Recorded, not only answered: a 2xx rides on the relay's next statement, and a mark lost
  // to the failure below would leave the event to its lease (a redelivery), not this test's.
  EXPECT_TRUE(eventually([&] { return db_.scalar("SELECT status FROM outbox") == "delivered"; }));

  auto connection = db_.connect();
  pqxx::nontransaction(*connection).exec("ALTER TABLE tidemark_cursor RENAME TO tidemark_cursor_away");
  EXPECT_TRUE(eventually([&] {
    const auto answer = http_request(port_, "GET", "/readyz");
    return answer.status == 503 && answer.body.find("outbox relay is restarting") != std::string::npos;
  })) << http_request(port_, "GET", "/readyz").body;
  EXPECT_TRUE(eventually([&] {
    return metrics().find(R"(tidemark_component_restarts_total{component="relay"} 0)") == std::string::npos;
  })) << "the relay was not restarted";

  pqxx::nontransaction(*connection).exec("ALTER TABLE tidemark_cursor_away RENAME TO tidemark_cursor");
  insert_event("second");
  EXPECT_TRUE(receiver_.wait_for_applied(2, 60s)) << "the restarted relay does not deliver";
  EXPECT_TRUE(eventually([&] { return http_request(port_, "GET", "/readyz").status == 200; }, 60s));
  // The receiver's 2xx comes before the relay records it (in its next claim), so wait for that.
  EXPECT_TRUE(eventually([&] {
    return db_.scalar("SELECT string_agg(status, ',' ORDER BY id) FROM outbox") == "delivered,delivered";
  })) << db_.scalar("SELECT string_agg(status, ',' ORDER BY id) FROM outbox");
}

// The cluster is stopped (as a crash would) for longer than a whole round of database retries
// (at most about 11 s), while a delivery is in flight whose 2xx arrives meanwhile. The relay
// waits the outage out without a restart, and records that answer afterwards: the event is
// not sent again. Before, the relay thread ended for good and /readyz still said 200.
TEST_F(RelayInServeTest, RelayWaitsOutADatabaseOutageLongerThanARoundOfRetries) {
  receiver_.set_slow_delay(3s);
  receiver_.fail_next(testing::Failure::kSlow);
  insert_event("during-outage");
  ASSERT_TRUE(receiver_.wait_for_applied(1, 20s));  // applied; the answer comes 3 s later

  TestDatabase::crash_cluster();
  const auto outage_started = std::chrono::steady_clock::now();
  EXPECT_EQ(http_request(port_, "GET", "/readyz").status, 503);
  std::this_thread::sleep_for(15s);
  TestDatabase::restart_cluster();
  std::cout << "outage of " << std::chrono::duration<double>(std::chrono::steady_clock::now() - outage_started).count()
            << " s\n";

  EXPECT_TRUE(eventually([&] { return db_.scalar("SELECT status FROM outbox") == "delivered"; }, 60s))
      << db_.scalar("SELECT status || ' ' || attempts || ' ' || coalesce(last_error, '') FROM outbox");
  EXPECT_EQ(receiver_.requests().size(), 1u) << "the answer of the outage was lost and the event sent again";
  EXPECT_TRUE(eventually([&] { return http_request(port_, "GET", "/readyz").status == 200; }, 30s));
  EXPECT_NE(metrics().find(R"(tidemark_component_restarts_total{component="relay"} 0)"), std::string::npos)
      << "the outage was not waited out: the relay was restarted";
}

}  // namespace
}  // namespace tidemark::app::serve
