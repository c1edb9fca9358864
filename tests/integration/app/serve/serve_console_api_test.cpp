// The console's JSON routes over serve's HTTP API, in-process against a real
// PostgreSQL over real HTTP on 127.0.0.1: GET /v1/outbox lists dead letters (and pending and
// delivered events) with their filters, a page at a time through `after_id`, and 400s that
// name the parameter at fault; POST /v1/outbox/{id}/retry revives a dead event as
// `tidemark outbox retry` does (pending, due now, by itself), after which a real relay delivers
// it to a real receiver, with 404 and 409 for what cannot be retried; GET /v1/views answers
// what `tidemark views list` shows; all three behind the API token. The relay is drained by
// the test itself (synchronous), so nothing waits on time.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "app/serve/service.hpp"
#include "app/wiring/options.hpp"
#include "app/wiring/sinks.hpp"
#include "pipeline/relay/relay.hpp"
#include "pipeline/store/outbox.hpp"
#include "pipeline/views/admin.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"
#include "tests/support/test_receiver.hpp"

namespace tidemark::app::serve {
namespace {

using testing::Failure;
using testing::HttpAnswer;
using testing::http_request;
using testing::TempDir;
using testing::TestDatabase;
using testing::TestReceiver;

constexpr char kSecret[] = "whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ=";  // "tidemark-test-secret"
constexpr char kSecretEnv[] = "TIDEMARK_CONSOLE_API_TEST_SECRET";
constexpr char kToken[] = "console-token";

class ServeConsoleApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv(kSecretEnv, kSecret, 1);
    // Three changes of acct-1 (sequences 1, 2, 3 of destination ledger) and one of acct-2.
    const auto source = dir_.write("in.csv",
                                   "transaction_id,source_revision,amount,account_id\n"
                                   "tx-1,1,1.00,acct-1\ntx-2,1,2.00,acct-1\ntx-3,1,3.00,acct-1\n"
                                   "tx-4,1,4.00,acct-2\n");
    const std::string yaml = "pipelines:\n  p:\n    source: {path: " + source.string() + "}\n" +
                             "    destinations:\n      - {name: ledger, kind: http, url: " + receiver_.url() +
                             ", secret_env: " + kSecretEnv + "}\n";
    config_ = app::config::parse_config(yaml, "console-api-test.yaml");
    pipeline::run_pipeline(testing::file_request(db_, "p", source));
    ASSERT_EQ(db_.scalar("SELECT count(*) FROM outbox WHERE status = 'pending'"), "4");
  }

  void TearDown() override {
    if (service_) {
      service_->request_stop();
      thread_.join();
    }
  }

  void start(std::optional<std::string> api_token = std::nullopt) {
    ServeOptions options;
    options.config = config_;
    options.database_url = db_.url();
    options.listen = "127.0.0.1:0";
    options.api.api_token = std::move(api_token);
    options.run_relay = false;  // the test drains a relay of its own, when it chooses
    service_ = std::make_unique<Service>(std::move(options));
    port_ = service_->port();
    thread_ = std::thread([this] { service_->run(); });
  }

  // Delivers everything due now through a real relay, and returns when it is recorded.
  void drain() {
    pipeline::relay::Relay relay(db_.url(), make_sinks(config_, db_.url()), relay_options(config_.relay));
    relay.drain();
  }

  // Every event dies: the receiver answers 400 (a client error other than 408 and 429).
  void kill_every_event() {
    receiver_.fail_always(Failure::kBadRequest);
    drain();
    ASSERT_EQ(db_.scalar("SELECT count(*) FROM outbox WHERE status = 'dead'"), "4");
    receiver_.fail_always(Failure::kNone);
  }

  boost::json::object get(const std::string& target, int status = 200) {
    const HttpAnswer answer = http_request(port_, "GET", target);
    EXPECT_EQ(answer.status, status) << target << ": " << answer.body;
    return boost::json::parse(answer.body).as_object();
  }

  HttpAnswer retry(const std::string& id) { return http_request(port_, "POST", "/v1/outbox/" + id + "/retry"); }

  std::vector<std::int64_t> ids_of(const boost::json::object& page) {
    std::vector<std::int64_t> ids;
    for (const auto& event : page.at("events").as_array()) ids.push_back(event.at("id").to_number<std::int64_t>());
    return ids;
  }

  std::vector<std::int64_t> ids_in_database(const std::string& where) {
    std::vector<std::int64_t> ids;
    for (const auto& row : testing::query_rows(db_, "SELECT id FROM outbox WHERE " + where + " ORDER BY id")) {
      ids.push_back(std::stoll(row[0]));
    }
    return ids;
  }

  TestDatabase db_;
  TempDir dir_;
  TestReceiver receiver_{kSecret};
  app::config::Config config_;
  std::unique_ptr<Service> service_;
  std::thread thread_;
  unsigned short port_ = 0;
};

TEST_F(ServeConsoleApiTest, DeadEventsAreListedWithTheirErrorFilteredAndPagedThroughAfterId) {
  start();
  kill_every_event();
  const auto dead = ids_in_database("status = 'dead'");

  const auto page = get("/v1/outbox?status=dead");
  EXPECT_EQ(ids_of(page), dead);
  EXPECT_TRUE(page.at("next").is_null());
  const auto& first = page.at("events").as_array().front().as_object();
  EXPECT_EQ(first.at("destination").as_string(), "ledger");
  EXPECT_EQ(first.at("idempotency_key").as_string(), "ledger:tx-1:1");
  EXPECT_EQ(first.at("partition_key").as_string(), "acct-1");
  EXPECT_EQ(first.at("sequence").to_number<std::int64_t>(), 1);
  EXPECT_EQ(first.at("status").as_string(), "dead");
  EXPECT_EQ(first.at("attempts").to_number<int>(), 1);
  EXPECT_EQ(first.at("last_error").as_string(), "HTTP 400: rejected");
  EXPECT_TRUE(first.at("next_attempt_at").is_string());
  EXPECT_TRUE(first.at("delivered_at").is_null());
  EXPECT_EQ(first.at("created_at").as_string(),
            db_.scalar("SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM outbox "
                       "WHERE id = " + std::to_string(dead[0])));

  // Pages of three, following `next`, give every dead event once, oldest first.
  const auto first_page = get("/v1/outbox?status=dead&limit=3");
  EXPECT_EQ(ids_of(first_page), std::vector<std::int64_t>(dead.begin(), dead.begin() + 3));
  EXPECT_EQ(first_page.at("next").as_string(),
            "/v1/outbox?limit=3&after_id=" + std::to_string(dead[2]) + "&status=dead");
  const auto last_page = get(std::string(first_page.at("next").as_string()));
  EXPECT_EQ(ids_of(last_page), std::vector<std::int64_t>{dead[3]});
  EXPECT_TRUE(last_page.at("next").is_null());

  // Filters: by destination, and by the other statuses (nothing pending or delivered now).
  EXPECT_EQ(ids_of(get("/v1/outbox?destination=ledger&status=dead&limit=1000")), dead);
  EXPECT_TRUE(ids_of(get("/v1/outbox?destination=elsewhere")).empty());
  EXPECT_TRUE(ids_of(get("/v1/outbox?status=pending")).empty());
  EXPECT_TRUE(ids_of(get("/v1/outbox?status=delivered")).empty());
  EXPECT_EQ(ids_of(get("/v1/outbox?after_id=" + std::to_string(dead[1]))),
            std::vector<std::int64_t>(dead.begin() + 2, dead.end()));
}

TEST_F(ServeConsoleApiTest, RetryRevivesADeadEventWhichTheRelayThenDeliversAndOnlyADeadOne) {
  start();
  kill_every_event();
  const std::int64_t first = ids_in_database("idempotency_key = 'ledger:tx-1:1'").at(0);
  const std::string id = std::to_string(first);
  const std::string key_head =
      "SELECT coalesce(head_sequence::text, 'none') FROM tidemark_cursor "
      "WHERE destination = 'ledger' AND partition_key = 'acct-1'";
  EXPECT_EQ(db_.scalar(key_head), "none");

  // A serving relay listens for the commit path's NOTIFY; a retry wakes it the same way.
  auto listener = db_.connect();
  pqxx::nontransaction(*listener).exec(std::string("LISTEN ") + pipeline::kOutboxChannel);

  const HttpAnswer revived = retry(id);
  ASSERT_EQ(revived.status, 200) << revived.body;
  EXPECT_EQ(listener->await_notification(30, 0), 1) << "the retry did not NOTIFY " << pipeline::kOutboxChannel;
  const auto event = boost::json::parse(revived.body).as_object();
  EXPECT_EQ(event.at("id").to_number<std::int64_t>(), first);
  EXPECT_EQ(event.at("status").as_string(), "pending");
  EXPECT_EQ(event.at("attempts").to_number<int>(), 0);
  EXPECT_TRUE(event.at("last_error").is_null());
  // Exactly as `tidemark outbox retry`: the revived event is pending and due now. It is
  // delivered by its own due time and holds nothing back, so its key still has no head
  // (before the change log it became its key's head again).
  EXPECT_EQ(db_.scalar("SELECT status || ' ' || (next_attempt_at <= now())::text FROM outbox WHERE id = " + id),
            "pending true");
  EXPECT_EQ(db_.scalar(key_head), "none");
  EXPECT_EQ(ids_of(get("/v1/outbox?status=pending")), std::vector<std::int64_t>{first});

  const HttpAnswer again = retry(id);
  EXPECT_EQ(again.status, 409) << again.body;
  EXPECT_EQ(again.body, "{\"error\":\"outbox event " + id + " is pending, not dead: only a dead event is retried\"}\n");

  drain();
  ASSERT_EQ(receiver_.applied_count(), 1u);
  EXPECT_EQ(receiver_.requests().back().key, "ledger:tx-1:1");
  const auto delivered = get("/v1/outbox?status=delivered");
  ASSERT_EQ(ids_of(delivered), std::vector<std::int64_t>{first});
  const auto& row = delivered.at("events").as_array().front().as_object();
  EXPECT_TRUE(row.at("delivered_at").is_string());
  EXPECT_TRUE(row.at("next_attempt_at").is_null());
  EXPECT_EQ(ids_of(get("/v1/outbox?status=dead&limit=1000")).size(), 3u) << "the others stay dead";

  const HttpAnswer after_delivery = retry(id);
  EXPECT_EQ(after_delivery.status, 409);
  EXPECT_NE(after_delivery.body.find("is delivered, not dead"), std::string::npos) << after_delivery.body;
  EXPECT_EQ(receiver_.requests().size(), 5u) << "four 400s and one delivery, nothing more";
}

TEST_F(ServeConsoleApiTest, UnknownEventsAre404AndBadQueriesAre400NamingTheParameter) {
  start();
  for (const char* unknown : {"999999", "0", "-1", "abc"}) {
    const HttpAnswer answer = retry(unknown);
    EXPECT_EQ(answer.status, 404) << unknown;
    EXPECT_EQ(answer.body, std::string("{\"error\":\"no outbox event ") + unknown + "\"}\n");
  }
  EXPECT_EQ(http_request(port_, "GET", "/v1/outbox/1/retry").status, 405);
  EXPECT_EQ(http_request(port_, "POST", "/v1/outbox").status, 405);
  EXPECT_EQ(http_request(port_, "POST", "/v1/views").status, 405);

  const std::vector<std::pair<std::string, std::string>> cases{
      {"status=done", "status must be one of pending, delivered, dead"},
      {"limit=0", "limit must be an integer from 1 to 1000"},
      {"limit=1001", "limit must be an integer from 1 to 1000"},
      {"limit=ten", "limit must be an integer from 1 to 1000"},
      {"after_id=0", "after_id must be a positive integer"},
      {"after_id=-3", "after_id must be a positive integer"},
      {"destination=", "destination must name a destination"},
      {"page=2", "unknown query parameter \"page\" (expected status, destination, limit, after_id)"},
  };
  for (const auto& [query, message] : cases) {
    const auto body = get("/v1/outbox?" + query, 400);
    EXPECT_NE(std::string(body.at("error").as_string()).find(message), std::string::npos)
        << query << ": " << body.at("error");
  }
  EXPECT_EQ(get("/v1/views?x=1", 400).at("error").as_string(),
            "unknown query parameter \"x\" (GET /v1/views takes none)");
  // 100 by default.
  EXPECT_EQ(ids_of(get("/v1/outbox")).size(), 4u);
}

TEST_F(ServeConsoleApiTest, ViewsAreListedAsViewsListShowsThem) {
  {
    auto connection = db_.connect();
    pipeline::views::ensure_first_versions(*connection, {"account_balance", "daily_totals"});
  }
  start();
  std::vector<pipeline::views::ViewVersion> expected;
  {
    auto connection = db_.connect();
    expected = pipeline::views::list_views(*connection);
  }
  const auto answer = get("/v1/views");
  const auto& views = answer.at("views").as_array();
  ASSERT_EQ(views.size(), expected.size());
  ASSERT_EQ(views.size(), 2u);
  for (std::size_t i = 0; i < views.size(); ++i) {
    const auto& view = views[i].as_object();
    EXPECT_EQ(view.at("view").as_string(), expected[i].name);
    EXPECT_EQ(view.at("version").to_number<int>(), expected[i].version);
    EXPECT_EQ(view.at("table").as_string(), expected[i].name + "_v1");
    EXPECT_EQ(view.at("status").as_string(), expected[i].status);
    EXPECT_EQ(view.at("status").as_string(), "live");
    EXPECT_EQ(view.at("position").as_string(), expected[i].position);
    EXPECT_EQ(view.at("created_at").as_string(), expected[i].created_at);
    EXPECT_EQ(view.at("pending").to_number<std::int64_t>(), expected[i].pending);
    EXPECT_EQ(view.at("dead").to_number<std::int64_t>(), expected[i].dead);
    EXPECT_EQ(view.at("lag_ms").to_number<std::int64_t>(), 0);
  }
  EXPECT_EQ(views[0].at("view").as_string(), "account_balance");
}

TEST_F(ServeConsoleApiTest, AllThreeRoutesNeedTheBearerTokenWhenOneIsSet) {
  start(kToken);
  kill_every_event();
  const std::string id = std::to_string(ids_in_database("status = 'dead'").at(0));
  const std::vector<std::pair<std::string, std::string>> routes{
      {"GET", "/v1/outbox?status=dead"}, {"POST", "/v1/outbox/" + id + "/retry"}, {"GET", "/v1/views"}};
  for (const auto& [method, target] : routes) {
    EXPECT_EQ(http_request(port_, method, target).status, 401) << target;
    EXPECT_EQ(http_request(port_, method, target, {{"Authorization", "Bearer wrong!"}}).status, 401) << target;
  }
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM outbox WHERE status = 'dead'"), "4") << "a 401 revives nothing";
  const std::map<std::string, std::string> auth{{"Authorization", std::string("Bearer ") + kToken}};
  EXPECT_EQ(http_request(port_, "GET", "/v1/outbox?status=dead", auth).status, 200);
  EXPECT_EQ(http_request(port_, "GET", "/v1/views", auth).status, 200);
  EXPECT_EQ(http_request(port_, "POST", "/v1/outbox/" + id + "/retry", auth).status, 200);
}

}  // namespace
}  // namespace tidemark::app::serve
