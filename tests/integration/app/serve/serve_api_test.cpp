// tidemark serve's HTTP API in-process against a real PostgreSQL, over real HTTP on
// 127.0.0.1: signed run triggers and every way to get them wrong, idempotency by
// webhook-id, coalescing of triggers during a run, the read endpoints, the quarantine and
// the metrics, which must agree with the ledger.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <boost/json.hpp>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "app/serve/service.hpp"
#include "connectors/http/signature.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::app::serve {
namespace {

using namespace std::chrono_literals;
using testing::HttpAnswer;
using testing::http_request;
using testing::metric_value;
using testing::TestDatabase;

constexpr char kSecret[] = "whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ=";  // "tidemark-test-secret"
constexpr char kPipeline[] = "transactions";

std::string key() { return *connectors::http::decode_secret(kSecret); }

// A CSV source of `count` valid records, plus one invalid and one conflicting record.
void write_source(const std::filesystem::path& path, int count) {
  std::ofstream out(path);
  out << "transaction_id,source_revision,amount,account_id\n";
  for (int i = 0; i < count; ++i) out << "tx-" << i << ",1," << (i % 500) << ".25,acct-" << i % 7 << "\n";
  out << "tx-bad,1,not-a-number,acct-1\n";
  out << "tx-0,1,999.99,acct-0\n";  // same key and revision as tx-0, other payload: conflict
}

std::map<std::string, std::string> signed_headers(const std::string& id, const std::string& body,
                                                  std::int64_t timestamp = std::time(nullptr)) {
  return {{"webhook-id", id},
          {"webhook-timestamp", std::to_string(timestamp)},
          {"webhook-signature", connectors::http::sign(key(), id, timestamp, body)}};
}

boost::json::object parse_object(const std::string& text) { return boost::json::parse(text).as_object(); }

// The sinks the tests add to spdlog's default logger while serve's threads log. The logger's
// own list of sinks is a plain vector that its threads read unlocked, so it is changed once,
// before any serve starts (ServeApiTest::SetUp); the tests' sinks come and go through this
// one, which locks.
std::shared_ptr<spdlog::sinks::dist_sink_mt> test_sinks() {
  static const auto sinks = [] {
    auto dist = std::make_shared<spdlog::sinks::dist_sink_mt>();
    spdlog::default_logger()->sinks().push_back(dist);
    return dist;
  }();
  return sinks;
}

// What the process logs at warn and above while it lives, one message a line as the text
// format writes them.
class WarnLog {
 public:
  WarnLog() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)) {
    sink_->set_pattern("%l %v");
    sink_->set_level(spdlog::level::warn);
    test_sinks()->add_sink(sink_);
  }
  ~WarnLog() { test_sinks()->remove_sink(sink_); }
  WarnLog(const WarnLog&) = delete;
  WarnLog& operator=(const WarnLog&) = delete;

  // The lines logged so far that contain `text`.
  std::vector<std::string> lines_with(const std::string& text) {
    sink_->flush();
    std::vector<std::string> lines;
    std::istringstream in(text_.str());
    for (std::string line; std::getline(in, line);) {
      if (line.find(text) != std::string::npos) lines.push_back(line);
    }
    return lines;
  }
  std::string all() {
    sink_->flush();
    return text_.str();
  }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

class ServeApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test_sinks();  // before serve's threads log
    directory_ = std::filesystem::temp_directory_path() /
                 ("tidemark-serve-api-" + std::to_string(::getpid()) + "-" + db_.name());
    std::filesystem::create_directories(directory_);
  }

  void TearDown() override {
    stop();
    std::filesystem::remove_all(directory_);
  }

  // Starts serve with one pipeline over a source of `records` valid records.
  void start(int records, std::size_t batch_size = 1000, std::optional<std::string> api_token = std::nullopt,
             const std::string& schedule = "", std::chrono::milliseconds request_timeout = 5s,
             const std::string& destinations = "") {
    write_source(directory_ / "in.csv", records);
    std::ofstream(directory_ / "in.csv", std::ios::app) << extra_source_;
    std::string yaml = "pipelines:\n  transactions:\n    source: {path: " + (directory_ / "in.csv").string() +
                       "}\n    batch_size: " + std::to_string(batch_size) + "\n";
    if (!schedule.empty()) yaml += "    schedule: " + schedule + "\n";
    if (!destinations.empty()) yaml += "    destinations: " + destinations + "\n";
    yaml += extra_yaml_;
    ServeOptions options;
    options.config = app::config::parse_config(yaml, "serve-test.yaml");
    options.database_url = db_.url();
    options.listen = "127.0.0.1:0";
    options.api.webhook_key = key();
    options.api.api_token = std::move(api_token);
    options.request_timeout = request_timeout;
    service_ = std::make_unique<Service>(std::move(options));
    port_ = service_->port();
    thread_ = std::thread([this] { exit_code_ = service_->run(); });
  }

  void stop() {
    if (!service_) return;
    service_->request_stop();
    thread_.join();
    service_.reset();
  }

  HttpAnswer trigger(const std::string& id, const std::string& body = R"({"mode":"resume","reason":"test"})",
                     const std::string& pipeline = kPipeline) {
    return http_request(port_, "POST", "/v1/pipelines/" + pipeline + "/runs", signed_headers(id, body), body);
  }

  // Waits until the run has finished; returns its status document.
  boost::json::object wait_for_run(std::int64_t run_id, std::chrono::milliseconds timeout = 60s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const HttpAnswer answer = http_request(port_, "GET", "/v1/runs/" + std::to_string(run_id));
      EXPECT_EQ(answer.status, 200) << answer.body;
      auto run = parse_object(answer.body);
      const auto& status = run["status"].as_string();
      if (status == "succeeded" || status == "failed") return run;
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "run " << run_id << " did not finish: " << answer.body;
        return run;
      }
      std::this_thread::sleep_for(20ms);
    }
  }

  void wait_until_idle() {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline &&
           db_.scalar("SELECT count(*) FROM runs WHERE status IN ('queued', 'running')") != "0") {
      std::this_thread::sleep_for(20ms);
    }
  }

  std::string runs() const { return db_.scalar("SELECT count(*) FROM runs"); }

  // The value of one series in the /metrics text (0 when absent).
  double metric(const std::string& series) const { return metric_value(port_, series); }

  TestDatabase db_;
  std::string extra_yaml_;  // more top-level config sections, set before start()
  std::string extra_source_;  // more source lines, set before start()
  std::filesystem::path directory_;
  std::unique_ptr<Service> service_;
  std::thread thread_;
  unsigned short port_ = 0;
  int exit_code_ = -1;
};

TEST_F(ServeApiTest, ValidSignedTriggerAnswers202WithLocationAndTheRunCompletesTheSource) {
  start(2000);
  const HttpAnswer answer = trigger("msg-valid-1");
  ASSERT_EQ(answer.status, 202) << answer.body;
  auto body = parse_object(answer.body);
  const std::int64_t run_id = body["run_id"].as_int64();
  EXPECT_TRUE(body["status"] == "queued" || body["status"] == "running") << answer.body;
  EXPECT_EQ(answer.headers.at("location"), "/v1/runs/" + std::to_string(run_id));

  auto run = wait_for_run(run_id);
  EXPECT_EQ(run["status"], "succeeded");
  EXPECT_EQ(run["trigger"], "webhook");
  EXPECT_EQ(run["mode"], "resume");
  EXPECT_EQ(run["reason"], "test");
  EXPECT_EQ(run["request_id"], "msg-valid-1");
  EXPECT_EQ(run["input"].as_int64(), 2002);
  EXPECT_EQ(run["inserted"].as_int64(), 2000);
  EXPECT_EQ(run["invalid"].as_int64(), 1);
  EXPECT_EQ(run["conflict"].as_int64(), 1);  // tx-0's twin, two batches after tx-0 was stored
  EXPECT_EQ(run["batches"].as_int64(), 3);
  EXPECT_FALSE(run["started_at"].is_null());
  EXPECT_FALSE(run["finished_at"].is_null());
  EXPECT_EQ(metric("tidemark_webhook_requests_total{result=\"accepted\"}"), 1);
}

// Each source is described by the keys of its kind: a postgres or http source has no path.
TEST_F(ServeApiTest, ThePipelineListDescribesEachSourceByTheKeysOfItsKind) {
  extra_yaml_ =
      "  from_db:\n    source: {kind: postgres, url_env: SOURCE_DB_URL, table: public.orders, cursor: [updated_at, id]}\n"
      "  from_api:\n    source: {kind: http, url: \"http://127.0.0.1:9/v1/orders?since={checkpoint}\", records: data}\n";
  start(1);
  const HttpAnswer answer = http_request(port_, "GET", "/v1/pipelines");
  ASSERT_EQ(answer.status, 200) << answer.body;
  std::map<std::string, std::string> sources;
  const boost::json::value list = boost::json::parse(answer.body);
  for (const auto& entry : list.as_array()) {
    sources[std::string(entry.at("name").as_string())] = boost::json::serialize(entry.at("source"));
  }
  EXPECT_EQ(sources["transactions"],
            R"({"kind":"file","path":")" + (directory_ / "in.csv").string() + R"(","format":"csv"})");
  EXPECT_EQ(sources["from_db"], R"({"kind":"postgres","table":"public.orders","cursor":["updated_at","id"]})");
  // Its query redacted, as every URL the API shows (an api_key is most often there).
  EXPECT_EQ(sources["from_api"], R"({"kind":"http","url":"http://127.0.0.1:9/v1/orders?***"})");
}

TEST_F(ServeApiTest, ARunOfAPipelineLoadingADeclaredEntityCreatesAndLoadsItsTableAndCountsByEntity) {
  {
    std::ofstream(directory_ / "orders.csv") << "order_id,version,amount\no1,1,1.5\no2,1,2\no3,1,x\n";
  }
  // A second pipeline under pipelines: (the fixture's block comes first), then the entity.
  extra_yaml_ = "  orders_daily:\n    entity: orders\n    source: {path: " + (directory_ / "orders.csv").string() +
                "}\nentities:\n  orders:\n    key: order_id\n    revision: version\n    fields:\n"
                "      amount: {type: decimal, precision: 10, scale: 2, required: true}\n";
  start(1);
  const HttpAnswer answer = trigger("msg-orders-1", R"({"mode":"resume","reason":"test"})", "orders_daily");
  ASSERT_EQ(answer.status, 202) << answer.body;
  auto run = wait_for_run(parse_object(answer.body)["run_id"].as_int64());
  EXPECT_EQ(run["status"], "succeeded") << boost::json::serialize(run);
  EXPECT_EQ(run["inserted"].as_int64(), 2);
  EXPECT_EQ(run["invalid"].as_int64(), 1);
  EXPECT_EQ(db_.scalar("SELECT string_agg(order_id || '=' || amount::text, ',' ORDER BY order_id) FROM orders"),
            "o1=1.50,o2=2.00");
  EXPECT_EQ(db_.scalar("SELECT entity || ':' || field FROM quarantine"), "orders:amount");
  EXPECT_EQ(metric(R"(tidemark_records_total{entity="orders",outcome="inserted",pipeline="orders_daily"})"), 2);
  EXPECT_EQ(metric(R"(tidemark_records_total{entity="transaction",outcome="inserted",pipeline="transactions"})"), 0);

  // Released through the API, the entry is validated again by the orders declaration (not as
  // a transaction, which would fault its missing transaction_id): its amount is still wrong.
  const std::string id = db_.scalar("SELECT id FROM quarantine");
  const HttpAnswer released = http_request(port_, "POST", "/v1/quarantine/" + id + "/release");
  ASSERT_EQ(released.status, 200) << released.body;
  EXPECT_EQ(parse_object(released.body)["outcome"], "invalid");
  EXPECT_EQ(db_.scalar("SELECT entity || ':' || field FROM quarantine WHERE released_at IS NULL"), "orders:amount");
}

TEST_F(ServeApiTest, RejectedTriggersAnswerTheRightStatusAndStartNoRun) {
  start(10);
  const std::string body = R"({"mode":"resume"})";
  const std::string target = std::string("/v1/pipelines/") + kPipeline + "/runs";

  auto headers = signed_headers("msg-bad-signature", body);
  headers["webhook-signature"] = connectors::http::sign("another key", "msg-bad-signature", std::time(nullptr), body);
  EXPECT_EQ(http_request(port_, "POST", target, headers, body).status, 401);

  EXPECT_EQ(http_request(port_, "POST", target, {}, body).status, 401);  // no headers at all
  headers = signed_headers("msg-no-signature", body);
  headers.erase("webhook-signature");
  EXPECT_EQ(http_request(port_, "POST", target, headers, body).status, 401);

  EXPECT_EQ(http_request(port_, "POST", target, signed_headers("msg-old", body, std::time(nullptr) - 6 * 60), body).status,
            401);

  const std::string huge = R"({"mode":"resume","reason":")" + std::string(70 * 1024, 'x') + "\"}";
  const HttpAnswer too_large = http_request(port_, "POST", target, signed_headers("msg-huge", huge), huge);
  EXPECT_EQ(too_large.status, 413) << too_large.body;

  for (const std::string& malformed : {std::string("{\"mode\":"), std::string("[1,2]"), std::string(R"({"mode":"sideways"})"),
                                      std::string(R"({"mode":"resume","extra":1})")}) {
    EXPECT_EQ(http_request(port_, "POST", target, signed_headers("msg-malformed", malformed), malformed).status, 400)
        << malformed;
  }
  EXPECT_EQ(trigger("msg-unknown", body, "no-such-pipeline").status, 404);

  EXPECT_EQ(runs(), "0");
  // The unknown pipeline's webhook-id stays bound to its path, without a run.
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM run_requests WHERE run_id IS NOT NULL"), "0");
  EXPECT_EQ(metric("tidemark_webhook_requests_total{result=\"bad_signature\"}"), 1);
  EXPECT_EQ(metric("tidemark_webhook_requests_total{result=\"missing_headers\"}"), 2);
  EXPECT_EQ(metric("tidemark_webhook_requests_total{result=\"bad_timestamp\"}"), 1);
  EXPECT_EQ(metric("tidemark_webhook_requests_total{result=\"too_large\"}"), 1);
  EXPECT_EQ(metric("tidemark_webhook_requests_total{result=\"bad_request\"}"), 4);
  EXPECT_EQ(metric("tidemark_webhook_requests_total{result=\"unknown_pipeline\"}"), 1);
  EXPECT_EQ(metric("tidemark_webhook_requests_total{result=\"accepted\"}"), 0);
}

TEST_F(ServeApiTest, ATriggerForANatsPipelineIs409SinceServeConsumesItContinuously) {
  // A second pipeline, reading NATS (nobody listens there: its consumer logs and retries).
  extra_yaml_ = "  streamed:\n    source: {kind: nats, servers: [nats://127.0.0.1:1], stream: S}\n";
  start(10);
  const HttpAnswer answer = trigger("msg-streamed", R"({"mode":"resume"})", "streamed");
  EXPECT_EQ(answer.status, 409) << answer.body;
  EXPECT_NE(answer.body.find("serve consumes its partitions continuously"), std::string::npos) << answer.body;
  EXPECT_EQ(runs(), "0");
  EXPECT_EQ(metric("tidemark_webhook_requests_total{result=\"streamed\"}"), 1);
}

TEST_F(ServeApiTest, ReplayedWebhookIdReturnsTheSameRunAndStartsNothing) {
  start(100);
  const HttpAnswer first = trigger("msg-once");
  ASSERT_EQ(first.status, 202);
  const std::int64_t run_id = parse_object(first.body)["run_id"].as_int64();
  wait_for_run(run_id);

  const HttpAnswer again = trigger("msg-once");
  ASSERT_EQ(again.status, 202) << again.body;
  auto body = parse_object(again.body);
  EXPECT_EQ(body["run_id"].as_int64(), run_id);
  EXPECT_EQ(body["status"], "succeeded");
  EXPECT_EQ(runs(), "1");
  EXPECT_EQ(metric("tidemark_webhook_requests_total{result=\"repeated\"}"), 1);
}

TEST_F(ServeApiTest, TriggersDuringARunCoalesceIntoExactlyOneFollowUp) {
  start(30000, 100);  // 300 batches: long enough to trigger during it
  const std::int64_t first = parse_object(trigger("msg-first").body)["run_id"].as_int64();
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (db_.scalar("SELECT status FROM runs WHERE id = " + std::to_string(first)) != "running" &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  std::set<std::int64_t> follow_ups;
  for (int i = 0; i < 5; ++i) {
    const HttpAnswer answer = trigger("msg-during-" + std::to_string(i));
    ASSERT_EQ(answer.status, 202);
    follow_ups.insert(parse_object(answer.body)["run_id"].as_int64());
  }
  ASSERT_EQ(db_.scalar("SELECT status FROM runs WHERE id = " + std::to_string(first)), "running")
      << "the first run ended before the other triggers: make the source larger";
  ASSERT_EQ(follow_ups.size(), 1u);
  EXPECT_NE(*follow_ups.begin(), first);
  wait_until_idle();
  EXPECT_EQ(runs(), "2");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM run_requests WHERE run_id = " + std::to_string(*follow_ups.begin())), "5");
  // The follow-up resumed where the first run ended: nothing left to read.
  EXPECT_EQ(db_.scalar("SELECT COALESCE(sum(input), 0) FROM batch_ledger WHERE run_id = " +
                       std::to_string(*follow_ups.begin())),
            "0");
  EXPECT_EQ(db_.scalar("SELECT status FROM runs WHERE id = " + std::to_string(*follow_ups.begin())), "succeeded");
}

TEST_F(ServeApiTest, ThousandSignedRequestsOverConcurrentConnectionsStartExactlyTheRunsTheyWereAnswered) {
  start(3000, 500);
  constexpr int kThreads = 8;
  constexpr int kRequests = 1000;
  constexpr int kDistinctIds = 500;  // every id is sent twice
  const unsigned seed = 20240501;
  std::cout << "seed " << seed << std::endl;
  std::vector<int> order(kRequests);
  for (int i = 0; i < kRequests; ++i) order[i] = i % kDistinctIds;
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));

  std::mutex mutex;
  std::map<std::string, std::set<std::int64_t>> answers;  // webhook-id -> run ids answered
  int not_accepted = 0;
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < kRequests; i = next++) {
        const std::string id = "msg-load-" + std::to_string(order[i]);
        const HttpAnswer answer = trigger(id);
        std::lock_guard lock(mutex);
        if (answer.status != 202) {
          ++not_accepted;
          continue;
        }
        answers[id].insert(parse_object(answer.body)["run_id"].as_int64());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(not_accepted, 0);
  ASSERT_EQ(answers.size(), static_cast<std::size_t>(kDistinctIds));
  std::set<std::int64_t> run_ids;
  for (const auto& [id, ids] : answers) {
    EXPECT_EQ(ids.size(), 1u) << id << " was answered with different runs";
    run_ids.insert(ids.begin(), ids.end());
  }
  wait_until_idle();
  EXPECT_EQ(runs(), std::to_string(run_ids.size()));
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM run_requests"), std::to_string(kDistinctIds));
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM runs WHERE status <> 'succeeded'"), "0");
  // Runs of the pipeline never overlapped.
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM runs a JOIN runs b ON a.id < b.id "
                       "WHERE a.started_at < b.finished_at AND b.started_at < a.finished_at"),
            "0");
  EXPECT_EQ(db_.scalar("SELECT sum(input) FROM batch_ledger"), "3002");
  EXPECT_EQ(metric("tidemark_webhook_requests_total{result=\"accepted\"}") +
                metric("tidemark_webhook_requests_total{result=\"repeated\"}"),
            kRequests);
}

TEST_F(ServeApiTest, ReadEndpointsNeedTheBearerTokenWhenOneIsSetButProbesDoNot) {
  start(10, 1000, "s3cret");
  EXPECT_EQ(http_request(port_, "GET", "/v1/pipelines").status, 401);
  EXPECT_EQ(http_request(port_, "GET", "/v1/pipelines", {{"Authorization", "Bearer wrong!"}}).status, 401);
  EXPECT_EQ(http_request(port_, "GET", "/v1/runs/1").status, 401);
  EXPECT_EQ(http_request(port_, "GET", "/v1/quarantine").status, 401);
  EXPECT_EQ(http_request(port_, "POST", "/v1/quarantine/1/release").status, 401);
  const HttpAnswer pipelines = http_request(port_, "GET", "/v1/pipelines", {{"Authorization", "Bearer s3cret"}});
  ASSERT_EQ(pipelines.status, 200) << pipelines.body;
  const auto list = boost::json::parse(pipelines.body).as_array();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].as_object().at("name"), kPipeline);
  EXPECT_EQ(list[0].as_object().at("running"), false);
  EXPECT_EQ(http_request(port_, "GET", "/healthz").status, 200);
  EXPECT_EQ(http_request(port_, "GET", "/readyz").status, 200);
  EXPECT_EQ(http_request(port_, "GET", "/metrics").status, 200);
  EXPECT_EQ(http_request(port_, "GET", "/v1/runs/999", {{"Authorization", "Bearer s3cret"}}).status, 404);
  EXPECT_EQ(http_request(port_, "GET", "/v1/nothing", {{"Authorization", "Bearer s3cret"}}).status, 404);
  EXPECT_EQ(http_request(port_, "DELETE", "/v1/pipelines", {{"Authorization", "Bearer s3cret"}}).status, 405);
}

TEST_F(ServeApiTest, QuarantineListsRejectedRecordsAndReleaseRedrivesOneOnce) {
  start(10);
  wait_for_run(parse_object(trigger("msg-q").body)["run_id"].as_int64());
  const HttpAnswer list = http_request(port_, "GET", std::string("/v1/quarantine?pipeline=") + kPipeline + "&limit=2");
  ASSERT_EQ(list.status, 200) << list.body;
  auto page = parse_object(list.body);
  const auto entries = page["entries"].as_array();
  ASSERT_EQ(entries.size(), 2u);  // of three: the limit holds
  EXPECT_FALSE(page["next"].is_null());
  EXPECT_EQ(http_request(port_, "GET", "/v1/quarantine?limit=0").status, 400);
  EXPECT_EQ(http_request(port_, "GET", "/v1/quarantine?pipeline=other").body, "{\"entries\":[],\"next\":null}\n");

  // tx-0 and its twin shared a batch, so both were quarantined and no row is stored:
  // releasing one of them now inserts it.
  const std::int64_t id = std::stoll(db_.scalar(
      "SELECT id FROM quarantine WHERE reason = 'conflict' AND raw LIKE '%999.99%'"));
  const HttpAnswer released = http_request(port_, "POST", "/v1/quarantine/" + std::to_string(id) + "/release");
  ASSERT_EQ(released.status, 200) << released.body;
  EXPECT_EQ(parse_object(released.body)["outcome"], "inserted");
  EXPECT_EQ(db_.scalar("SELECT amount FROM transaction_state WHERE transaction_id = 'tx-0'"), "999.99");
  EXPECT_EQ(http_request(port_, "POST", "/v1/quarantine/" + std::to_string(id) + "/release").status, 409);
  EXPECT_EQ(http_request(port_, "POST", "/v1/quarantine/123456/release").status, 404);
  EXPECT_EQ(metric(std::string("tidemark_records_total{entity=\"transaction\",outcome=\"inserted\",pipeline=\"") + kPipeline + "\"}"),
            std::stod(db_.scalar("SELECT sum(inserted) FROM batch_ledger")));
}

TEST_F(ServeApiTest, ExposedRecordCountsEqualTheLedgerAfterSeveralRuns) {
  start(1500, 400);
  wait_for_run(parse_object(trigger("msg-m1").body)["run_id"].as_int64());
  wait_for_run(parse_object(trigger("msg-m2", R"({"mode":"replay"})").body)["run_id"].as_int64());
  wait_for_run(parse_object(trigger("msg-m3").body)["run_id"].as_int64());
  for (const char* outcome : {"inserted", "updated", "unchanged", "stale", "superseded", "duplicate", "invalid",
                              "conflict"}) {
    const std::string series =
        std::string("tidemark_records_total{entity=\"transaction\",outcome=\"") + outcome + "\",pipeline=\"" + kPipeline + "\"}";
    EXPECT_EQ(metric(series), std::stod(db_.scalar(std::string("SELECT sum(") + outcome + ") FROM batch_ledger")))
        << outcome;
  }
  EXPECT_GT(metric(std::string("tidemark_records_total{entity=\"transaction\",outcome=\"unchanged\",pipeline=\"") + kPipeline + "\"}"), 0);
  EXPECT_EQ(metric(std::string("tidemark_runs_total{pipeline=\"") + kPipeline +
                   "\",status=\"succeeded\",trigger=\"webhook\"}"),
            3);
  EXPECT_EQ(metric(std::string("tidemark_batches_total{pipeline=\"") + kPipeline + "\",status=\"committed\"}"),
            std::stod(db_.scalar("SELECT count(*) FROM batch_ledger")));
}

// Each rejected trigger is one warn line with its status, result and reason, and nothing
// secret; a newline in a quoted key stays inside its line (escaped), not a forged line.
TEST_F(ServeApiTest, RejectedTriggersAreLoggedAtWarnOneLineEachWithoutSecrets) {
  start(10);
  WarnLog log;
  const std::string body = R"({"mode":"resume"})";
  const std::string target = std::string("/v1/pipelines/") + kPipeline + "/runs";
  auto headers = signed_headers("msg-bad-signature", body);
  headers["webhook-signature"] = connectors::http::sign("another key", "msg-bad-signature", std::time(nullptr), body);
  EXPECT_EQ(http_request(port_, "POST", target, headers, body).status, 401);
  const std::string unknown_key = "{\"mode\":\"resume\",\"evil\\n2026-12-01T06:00:00.000Z info forged\":1}";
  const auto good_headers = signed_headers("msg-unknown-key", unknown_key);
  EXPECT_EQ(http_request(port_, "POST", target, good_headers, unknown_key).status, 400);

  const auto rejected = log.lines_with("run trigger rejected");
  ASSERT_EQ(rejected.size(), 2u) << log.all();
  EXPECT_EQ(rejected[0], "warning run trigger rejected: 401 bad_signature: \"no webhook-signature matches\"") << log.all();
  EXPECT_EQ(rejected[1],
            "warning run trigger rejected: 400 bad_request: \"unknown field \\\"evil\\n2026-12-01T06:00:00.000Z info "
            "forged\\\" (expected mode, reason)\"");
  const auto forged = log.lines_with("forged");  // inside the reject line, not a line of its own
  ASSERT_EQ(forged.size(), 1u) << log.all();
  EXPECT_THAT(forged[0], ::testing::StartsWith("warning run trigger rejected: ")) << log.all();
  for (const std::string& secret : {std::string(kSecret), headers["webhook-signature"], good_headers.at("webhook-signature")}) {
    EXPECT_EQ(log.all().find(secret), std::string::npos) << secret;
  }
}

TEST_F(ServeApiTest, AClientThatStallsAfterItsHeaderIsCutOffAndCounted) {
  start(10, 1000, std::nullopt, "", 300ms);
  WarnLog log;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port_);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const std::string head = std::string("POST /v1/pipelines/") + kPipeline +
                           "/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"mode\":";
  ASSERT_EQ(::send(fd, head.data(), head.size(), 0), static_cast<ssize_t>(head.size()));
  char byte = 0;
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(::recv(fd, &byte, 1, 0), 0);  // the server closes the connection
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  ::close(fd);
  EXPECT_EQ(metric("tidemark_webhook_requests_total{result=\"timeout\"}"), 1);
  EXPECT_EQ(runs(), "0");
  EXPECT_EQ(log.lines_with("run trigger rejected: timeout").size(), 1u) << log.all();
}

TEST_F(ServeApiTest, ShortEveryScheduleRunsRepeatedlyWithoutOverlap) {
  start(3000, 500, std::nullopt, "{every: 100ms}");
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::stoi(db_.scalar("SELECT count(*) FROM runs WHERE status = 'succeeded'")) < 4 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  stop();
  EXPECT_EQ(exit_code_, 0);
  EXPECT_GE(std::stoi(db_.scalar("SELECT count(*) FROM runs WHERE trigger = 'schedule' AND status = 'succeeded'")), 4);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM runs WHERE status IN ('running', 'queued')"), "0");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM runs a JOIN runs b ON a.id < b.id "
                       "WHERE a.started_at < b.finished_at AND b.started_at < a.finished_at"),
            "0");
  EXPECT_EQ(db_.scalar("SELECT sum(input) FROM batch_ledger"), "3002");  // read once, then resumed at the end
}

// Read-your-writes: a user who just loaded a batch asks for an account as of the sequence
// their load gave it; the answer waits for the view (fed by serve's relay) or says 409.
TEST_F(ServeApiTest, AccountViewAnswersOnceTheViewHasAppliedTheSequenceAndOtherwise409) {
  start(70, 1000, std::nullopt, "", 5s, "[{name: account_balance, kind: view}]");
  const std::string account = "/v1/views/account_balance/accounts/acct-3";
  const HttpAnswer before = http_request(port_, "GET", account + "?min_sequence=1&timeout_ms=100");
  EXPECT_EQ(before.status, 409) << before.body;

  const HttpAnswer answer = trigger("msg-view-1");
  ASSERT_EQ(answer.status, 202) << answer.body;
  EXPECT_EQ(wait_for_run(parse_object(answer.body)["run_id"].as_int64())["status"], "succeeded");

  // acct-3 holds tx-3, tx-10, … tx-66: ten transactions of (i + 0.25), sequences 1 to 10.
  const HttpAnswer after = http_request(port_, "GET", account + "?min_sequence=10&timeout_ms=10000");
  ASSERT_EQ(after.status, 200) << after.body;
  auto body = parse_object(after.body);
  EXPECT_EQ(body["view"], "account_balance_v1");
  EXPECT_EQ(body["sequence"].as_int64(), 10);
  EXPECT_EQ(body["balance"], "347.50");
  // serve's view sinks count in its /metrics: at least acct-3's ten events (each counted just
  // after its commit), none dead.
  const std::string applied = "tidemark_view_events_total{result=\"applied\",view=\"account_balance\"}";
  for (const auto deadline = std::chrono::steady_clock::now() + 5s;
       metric(applied) < 10 && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_GE(metric(applied), 10);
  EXPECT_EQ(metric("tidemark_view_events_total{result=\"dead\",view=\"account_balance\"}"), 0);

  EXPECT_EQ(http_request(port_, "GET", account + "?min_sequence=11&timeout_ms=100").status, 409);
  EXPECT_EQ(http_request(port_, "GET", account + "?min_sequence=-1").status, 400);
  EXPECT_EQ(http_request(port_, "GET", "/v1/views/daily_totals/accounts/acct-3").status, 404);
}

// --- Hostile clients ---

int count_of(const std::string& text, const std::string& part) {
  int count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

// Reads from `fd` until the peer closes (true) or `timeout` passes (false).
bool closed_by_peer(int fd, std::chrono::milliseconds timeout) {
  timeval limit{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  char chunk[4096];
  for (;;) {
    const ssize_t got = ::recv(fd, chunk, sizeof chunk, 0);
    if (got == 0) return true;
    if (got < 0) return errno == ECONNRESET;
  }
}

TEST_F(ServeApiTest, ATransferEncodingNotEndingInChunkedIs400AndItsBodyIsNeverReadAsARequest) {
  start(10);
  for (const std::string& coding : std::vector<std::string>{"chunked, identity", "xchunked", "identity"}) {
    // Behind a proxy that frames by this header, the "body" is part of this request; Beast
    // alone would read no body and answer the smuggled GET as a second request.
    const std::string smuggled = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    const auto exchange = testing::raw_exchange(
        port_, "POST /v1/pipelines/transactions/runs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + coding + "\r\n\r\n" +
                   smuggled);
    EXPECT_TRUE(exchange.closed) << coding;
    EXPECT_EQ(count_of(exchange.received, "HTTP/1.1 "), 1) << coding << ":\n" << exchange.received;
    EXPECT_EQ(exchange.received.rfind("HTTP/1.1 400 ", 0), 0u) << coding << ":\n" << exchange.received;
    EXPECT_NE(exchange.received.find("Transfer-Encoding"), std::string::npos) << exchange.received;
  }
  // Chunked itself still works.
  const std::string body = R"({"mode":"resume"})";
  std::string head = "POST /v1/pipelines/transactions/runs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     "Transfer-Encoding: gzip, chunked\r\n";
  for (const auto& [name, value] : signed_headers("msg-chunked", body)) head += name + ": " + value + "\r\n";
  std::ostringstream chunk;
  chunk << std::hex << body.size() << "\r\n" << body << "\r\n0\r\n\r\n";
  EXPECT_EQ(testing::raw_exchange(port_, head + "\r\n" + chunk.str()).received.rfind("HTTP/1.1 202 ", 0), 0u);
}

TEST_F(ServeApiTest, ARepeatedCredentialOrSignatureHeaderIs400) {
  start(10);
  const std::string body = R"({"mode":"resume"})";
  const auto headers = signed_headers("msg-twice-b", body);
  for (const std::string& repeated : std::vector<std::string>{"webhook-id", "webhook-timestamp", "webhook-signature"}) {
    // The second copy is the signed one: whoever reads the first sees another request.
    std::string request = "POST /v1/pipelines/transactions/runs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                          "Content-Length: " + std::to_string(body.size()) + "\r\n";
    const std::map<std::string, std::string> decoys{
        {"webhook-id", "msg-twice-a"}, {"webhook-timestamp", "1"}, {"webhook-signature", "v1,AAAA"}};
    request += repeated + ": " + decoys.at(repeated) + "\r\n";
    for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
    const auto exchange = testing::raw_exchange(port_, request + "\r\n" + body);
    EXPECT_EQ(exchange.received.rfind("HTTP/1.1 400 ", 0), 0u) << repeated << ":\n" << exchange.received;
  }
  const auto exchange = testing::raw_exchange(
      port_, "GET /v1/pipelines HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n"
             "Connection: close\r\n\r\n");
  EXPECT_EQ(exchange.received.rfind("HTTP/1.1 400 ", 0), 0u) << exchange.received;
  EXPECT_EQ(runs(), "0");
}

TEST_F(ServeApiTest, AWebhookIdOver256BytesOrNotPrintableAsciiIs400) {
  start(10);
  for (const std::string& id : {std::string(257, 'm'), std::string(4000, 'm'), std::string("msg-\xc3\xa9t\xc3\xa9"),
                               std::string("msg\tx")}) {
    const HttpAnswer answer = trigger(id);
    EXPECT_EQ(answer.status, 400) << id.size() << " bytes: " << answer.body;
  }
  EXPECT_EQ(trigger(std::string(256, 'm')).status, 202);
  EXPECT_EQ(runs(), "1");
  EXPECT_EQ(metric("tidemark_webhook_requests_total{result=\"bad_request\"}"), 4);
}

TEST_F(ServeApiTest, AWebhookIdFirstSeenOnOnePathIsRefusedOnAnotherEvenAfterA404) {
  start(10);
  // The signature covers id, timestamp and body, not the path: the same signed request
  // could otherwise be replayed to any pipeline.
  EXPECT_EQ(trigger("msg-moved", R"({"mode":"replay"})", "no-such-pipeline").status, 404);
  const HttpAnswer moved = trigger("msg-moved", R"({"mode":"replay"})");
  EXPECT_EQ(moved.status, 409) << moved.body;
  EXPECT_NE(moved.body.find("no-such-pipeline"), std::string::npos) << moved.body;
  EXPECT_EQ(runs(), "0");

  ASSERT_EQ(trigger("msg-here").status, 202);
  EXPECT_EQ(trigger("msg-here", R"({"mode":"resume","reason":"test"})", "elsewhere").status, 409);
  EXPECT_EQ(trigger("msg-here").status, 202);  // on its own path it is still a repeat
  EXPECT_EQ(runs(), "1");
  // Bound to this path while an earlier config had no such pipeline: a new request now.
  db_.scalar("INSERT INTO run_requests (request_id, pipeline) VALUES ('msg-before', 'transactions') RETURNING 1");
  const HttpAnswer before = trigger("msg-before");
  ASSERT_EQ(before.status, 202) << before.body;
  EXPECT_EQ(db_.scalar("SELECT run_id FROM run_requests WHERE request_id = 'msg-before'"),
            std::to_string(parse_object(before.body)["run_id"].as_int64()));
  EXPECT_EQ(metric("tidemark_webhook_requests_total{result=\"other_pipeline\"}"), 2);
  EXPECT_EQ(metric("tidemark_webhook_requests_total{result=\"accepted\"}"), 2);
}

TEST_F(ServeApiTest, RunRequestsPastRetentionRequestsAreDeletedByServe) {
  extra_yaml_ = "retention: {requests: 24h}\n";
  db_.scalar("INSERT INTO run_requests (request_id, pipeline, received_at) VALUES "
             "('msg-old', 'transactions', now() - interval '25 hours'), "
             "('msg-recent', 'transactions', now() - interval '23 hours') RETURNING 1");
  start(10);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (db_.scalar("SELECT count(*) FROM run_requests WHERE request_id = 'msg-old'") != "0" &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(db_.scalar("SELECT string_agg(request_id, ',') FROM run_requests"), "msg-recent");
}

TEST_F(ServeApiTest, AWebhookIdPastRetentionStillAnswersWithTheRunItStarted) {
  extra_yaml_ = "retention: {requests: 24h}\n";
  const std::string run_id = db_.scalar(
      "INSERT INTO runs (pipeline, trigger, mode, status, request_id, requested_at) "
      "VALUES ('transactions', 'webhook', 'resume', 'succeeded', 'msg-aged', now() - interval '2 days') RETURNING id");
  db_.scalar("INSERT INTO run_requests (request_id, run_id, pipeline, received_at) VALUES ('msg-aged', " + run_id +
             ", 'transactions', now() - interval '2 days') RETURNING 1");
  start(10);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (db_.scalar("SELECT count(*) FROM run_requests") != "0" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(db_.scalar("SELECT count(*) FROM run_requests"), "0");
  const HttpAnswer again = trigger("msg-aged");
  ASSERT_EQ(again.status, 202) << again.body;  // not a unique violation on runs.request_id
  EXPECT_EQ(parse_object(again.body)["run_id"].as_int64(), std::stoll(run_id));
  EXPECT_EQ(trigger("msg-aged", R"({"mode":"resume","reason":"test"})", "elsewhere").status, 409);
  EXPECT_EQ(runs(), "1");
}

TEST_F(ServeApiTest, BeyondMaxConnectionsTheOldestIdleConnectionIsClosed) {
  extra_yaml_ = "http: {listen: 127.0.0.1:0, max_connections: 4}\n";
  start(10, 1000, std::nullopt, "", 30s);  // idle connections are not cut off by the timeout meanwhile
  // Four keep-alive connections, each idle after one answered request.
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(testing::connect_loopback(port_));
    ASSERT_GE(idle.back(), 0);
    const std::string request = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(::send(idle.back(), request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
    char answer[512];
    ASSERT_GT(::recv(idle.back(), answer, sizeof answer, 0), 0);
    std::this_thread::sleep_for(5ms);  // distinct idle times: the first is the oldest
  }
  const HttpAnswer fifth = http_request(port_, "GET", "/healthz");
  EXPECT_EQ(fifth.status, 200);
  EXPECT_TRUE(closed_by_peer(idle[0], 2s)) << "the oldest idle connection stays open";
  EXPECT_FALSE(closed_by_peer(idle[3], 200ms)) << "the newest idle connection was closed";
  for (int fd : idle) ::close(fd);
}

TEST_F(ServeApiTest, BeyondMaxConnectionsWithEveryOneBusyANewConnectionIsAnswered503ButTheProbesAre200) {
  extra_yaml_ = "http: {listen: 127.0.0.1:0, max_connections: 4}\n";
  start(10, 1000, std::nullopt, "", 30s, "[{name: account_balance, kind: view}]");
  // Four connections, each with a request in hand: a wait for a sequence that never comes.
  std::vector<int> busy;
  for (int i = 0; i < 4; ++i) {
    busy.push_back(testing::connect_loopback(port_));
    ASSERT_GE(busy.back(), 0);
    const std::string request =
        "GET /v1/views/account_balance/accounts/acct-1?min_sequence=9&timeout_ms=3000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    ASSERT_EQ(::send(busy.back(), request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  }
  // Until all four are in hand, a fifth connection is still served (and closes).
  HttpAnswer fifth;
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (fifth.status != 503 && std::chrono::steady_clock::now() < deadline) {
    fifth = http_request(port_, "GET", "/v1/pipelines");
  }
  EXPECT_EQ(fifth.status, 503) << fifth.body;
  EXPECT_EQ(fifth.headers["retry-after"], "1");
  EXPECT_NE(fifth.body.find("http.max_connections"), std::string::npos) << fifth.body;
  // The probes have connections of their own beyond the cap: a liveness probe never fails
  // because the API is busy.
  for (const char* probe : {"/healthz", "/readyz", "/metrics"}) EXPECT_EQ(http_request(port_, "GET", probe).status, 200) << probe;
  // The busy ones are answered in full, then there is room again.
  for (int fd : busy) {
    char answer[512];
    const ssize_t got = ::recv(fd, answer, sizeof answer, 0);
    ASSERT_GT(got, 0);
    EXPECT_EQ(std::string(answer, static_cast<std::size_t>(got)).rfind("HTTP/1.1 409 ", 0), 0u);
    ::close(fd);
  }
  const auto again = std::chrono::steady_clock::now() + 5s;
  int status = 0;
  while ((status = http_request(port_, "GET", "/healthz").status) != 200 && std::chrono::steady_clock::now() < again) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(status, 200);
}

TEST_F(ServeApiTest, ProbesDoNotWaitForSlowReadYourWritesRequests) {
  start(10, 1000, std::nullopt, "", 30s, "[{name: account_balance, kind: view}]");
  const HttpAnswer answer = trigger("msg-slow-view");
  ASSERT_EQ(answer.status, 202) << answer.body;
  ASSERT_EQ(wait_for_run(parse_object(answer.body)["run_id"].as_int64())["status"], "succeeded");
  // Eight waits for a sequence that never comes: twice as many as serve has workers. Each
  // lasts 10 s; a probe that had to wait for them would be answered after one of them.
  std::vector<std::thread> waits;
  std::atomic<int> answered_409{0};
  for (int i = 0; i < 8; ++i) {
    waits.emplace_back([&] {
      if (http_request(port_, "GET", "/v1/views/account_balance/accounts/acct-3?min_sequence=999&timeout_ms=10000")
              .status == 409) {
        ++answered_409;
      }
    });
  }
  std::this_thread::sleep_for(300ms);  // the waits have begun
  for (const char* probe : {"/healthz", "/readyz", "/metrics", "/v1/pipelines"}) {
    const auto started = std::chrono::steady_clock::now();
    EXPECT_EQ(http_request(port_, "GET", probe).status, 200) << probe;
    const auto took = std::chrono::steady_clock::now() - started;
    std::cout << probe << " answered in " << std::chrono::duration<double, std::milli>(took).count()
              << " ms during 8 slow waits" << std::endl;
    // The event, not a time bound (load and the sanitizers make a probe slow on their own).
    EXPECT_EQ(answered_409, 0) << probe << " was answered only after a slow request ended";
  }
  for (auto& wait : waits) wait.join();
  EXPECT_EQ(answered_409, 8);
}

// Connects to serve and sends the head of a run trigger declaring a 100-byte body, and one
// byte of it: a client that holds a connection with a body it never finishes.
int slow_body(unsigned short port) {
  const int fd = testing::connect_loopback(port);
  if (fd < 0) return fd;
  const std::string head = std::string("POST /v1/pipelines/") + kPipeline +
                           "/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                           "Content-Length: 100\r\n\r\n{";
  if (::send(fd, head.data(), head.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(head.size())) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST_F(ServeApiTest, WithEverySlotHeldBySlowBodiesHealthzAnswers200WithinASecondEveryTime) {
  extra_yaml_ = "http: {listen: 127.0.0.1:0, max_connections: 4}\n";
  start(10, 1000, std::nullopt, "", 30s);  // a slot held by a slow body is not freed by the timeout meanwhile
  WarnLog log;
  std::vector<int> attackers;
  // Each round the attacker fills every slot again, as a flood refills the ones it loses.
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 4; ++i) {
      attackers.push_back(slow_body(port_));
      ASSERT_GE(attackers.back(), 0);
    }
    const auto started = std::chrono::steady_clock::now();
    const HttpAnswer probe = http_request(port_, "GET", "/healthz", {}, "", 1s);
    EXPECT_EQ(probe.status, 200) << "round " << round << ": " << probe.body;
    EXPECT_LT(std::chrono::steady_clock::now() - started, 1s) << "round " << round;
  }
  EXPECT_EQ(http_request(port_, "GET", "/readyz", {}, "", 5s).status, 200);
  EXPECT_EQ(http_request(port_, "GET", "/metrics", {}, "", 5s).status, 200);
  // The slowest bodies were shed to make room, each counted as a stalled trigger; the
  // warnings about them are one line, however many there were.
  EXPECT_GE(metric("tidemark_webhook_requests_total{result=\"timeout\"}"), 6 * 4 - 4);
  EXPECT_LE(log.lines_with("run trigger rejected: timeout").size(), 1u) << log.all();
  for (int fd : attackers) ::close(fd);
  EXPECT_EQ(runs(), "0");
}

TEST_F(ServeApiTest, ABodySentBelowTheMinimumRateIsCutOffLongBeforeTheTimeoutAndLoggedOnce) {
  start(10, 1000, std::nullopt, "", 30s);
  WarnLog log;
  std::vector<int> slow;
  for (int i = 0; i < 5; ++i) {
    slow.push_back(slow_body(port_));
    ASSERT_GE(slow.back(), 0);
  }
  // 100 bytes are due within the 2 s grace (+ 100 B / 8 KiB/s), not the 30 s timeout.
  const auto started = std::chrono::steady_clock::now();
  for (int fd : slow) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(started + 8s - std::chrono::steady_clock::now());
    EXPECT_TRUE(closed_by_peer(fd, std::max(left, 1ms))) << "a trickling body holds its connection";
    ::close(fd);
  }
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_LT(took, 8s);
  std::cout << "5 slow bodies cut off after " << std::chrono::duration<double>(took).count() << " s" << std::endl;
  EXPECT_EQ(metric("tidemark_webhook_requests_total{result=\"timeout\"}"), 5);
  EXPECT_EQ(log.lines_with("run trigger rejected: timeout").size(), 1u) << log.all();
  EXPECT_EQ(runs(), "0");
}

TEST_F(ServeApiTest, WithoutATokenAnotherOriginCannotReleaseOrRetryAndAnotherHostCannotRead) {
  extra_yaml_ = "http: {listen: 127.0.0.1:0, allowed_hosts: [tidemark.internal]}\n";
  start(10);
  wait_for_run(parse_object(trigger("msg-csrf").body)["run_id"].as_int64());
  const std::string id = db_.scalar("SELECT id FROM quarantine WHERE reason = 'conflict' AND raw LIKE '%999.99%'");
  const std::string release = "/v1/quarantine/" + id + "/release";
  const std::string host = "127.0.0.1:" + std::to_string(port_);
  // A form of another site posting to serve in the operator's browser, and a script.
  const std::map<std::string, std::string> form{
      {"Host", host}, {"Origin", "http://evil"}, {"Content-Type", "application/x-www-form-urlencoded"}};
  EXPECT_EQ(http_request(port_, "POST", release, form).status, 403);
  EXPECT_EQ(http_request(port_, "POST", release, {{"Host", host}, {"Origin", "http://evil"}}).status, 403);
  EXPECT_EQ(http_request(port_, "POST", release, {{"Host", host}, {"Sec-Fetch-Site", "cross-site"}}).status, 403);
  EXPECT_EQ(http_request(port_, "POST", release, {{"Host", host}, {"Content-Type", "text/plain"}}).status, 415);
  const HttpAnswer retry = http_request(port_, "POST", "/v1/outbox/1/retry", form);
  EXPECT_EQ(retry.status, 403) << retry.body;
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM quarantine WHERE id = " + id + " AND released_at IS NULL"), "1");
  // DNS rebinding: another name for 127.0.0.1 reads nothing.
  const HttpAnswer rebound = http_request(port_, "GET", "/v1/pipelines", {{"Host", "evil.example:" + std::to_string(port_)}});
  EXPECT_EQ(rebound.status, 403) << rebound.body;
  EXPECT_EQ(rebound.body.find(kPipeline), std::string::npos) << rebound.body;
  // Serve's own names and origin (the console's page) are served.
  for (const std::string& name : {host, "localhost:" + std::to_string(port_), std::string("tidemark.internal")}) {
    EXPECT_EQ(http_request(port_, "GET", "/v1/pipelines", {{"Host", name}}).status, 200) << name;
  }
  const HttpAnswer released = http_request(
      port_, "POST", release, {{"Host", host}, {"Origin", "http://" + host}, {"Sec-Fetch-Site", "same-origin"}});
  EXPECT_EQ(released.status, 200) << released.body;
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM quarantine WHERE id = " + id + " AND released_at IS NULL"), "0");
  // The signed trigger is its own proof: no Origin or Content-Type rule applies to it.
  const std::string body = R"({"mode":"resume"})";
  auto signed_form = signed_headers("msg-csrf-2", body);
  signed_form["Content-Type"] = "text/plain";
  signed_form["Origin"] = "http://sender.example";
  EXPECT_EQ(http_request(port_, "POST", std::string("/v1/pipelines/") + kPipeline + "/runs", signed_form, body).status,
            202);
}

TEST_F(ServeApiTest, APathOrQueryThatIsNotUtf8Is400AndNeverReachesPostgres) {
  start(10);
  WarnLog log;
  for (const char* target : {"/v1/runs?pipeline=%c3", "/v1/quarantine?pipeline=%ff", "/v1/outbox?destination=%c3",
                             "/v1/pipelines/%ff", "/v1/runs?pipeline=a%00b", "/v1/views/account_balance/accounts/%ff"}) {
    const HttpAnswer answer = http_request(port_, "GET", target);
    EXPECT_EQ(answer.status, 400) << target << ": " << answer.body;
  }
  EXPECT_EQ(log.lines_with("invalid byte sequence").size(), 0u) << log.all();
}

TEST_F(ServeApiTest, QuarantineListsCutRawRecordsTo4KiBAndPagesByBytesTheEntryHasTheWholeRecord) {
  // 300 invalid records of 8 KiB each (2.4 MB), after the usual invalid one and conflict pair.
  for (int i = 0; i < 300; ++i) extra_source_ += "tx-big-" + std::to_string(i) + ",1,not-a-number," + std::string(8192, 'x') + "\n";
  start(5);
  ASSERT_EQ(wait_for_run(parse_object(trigger("msg-big").body)["run_id"].as_int64())["status"], "succeeded");
  ASSERT_EQ(db_.scalar("SELECT count(*) FROM quarantine"), "303");

  std::set<std::int64_t> listed;
  std::string target = "/v1/quarantine?limit=1000";
  int pages = 0;
  std::size_t largest_page = 0;
  std::int64_t big_id = 0;
  while (!target.empty()) {
    const HttpAnswer page = http_request(port_, "GET", target);
    ASSERT_EQ(page.status, 200) << page.body;
    EXPECT_LT(page.body.size(), 1200u * 1024) << "a page over the byte budget";
    largest_page = std::max(largest_page, page.body.size());
    auto body = parse_object(page.body);
    for (const auto& value : body["entries"].as_array()) {
      const auto& entry = value.as_object();
      const bool big = entry.at("transaction_id").as_string().starts_with("tx-big-");
      EXPECT_LE(entry.at("raw").as_string().size(), 4096u);
      EXPECT_EQ(entry.at("raw_truncated").as_bool(), big);
      if (big) big_id = entry.at("id").as_int64();
      EXPECT_TRUE(listed.insert(entry.at("id").as_int64()).second) << "listed twice";
    }
    target = body["next"].is_null() ? "" : std::string(body["next"].as_string());
    ASSERT_LT(++pages, 10);
  }
  EXPECT_GE(pages, 2);
  EXPECT_EQ(listed.size(), 303u);
  std::cout << "303 entries of 8 KiB records: " << pages << " pages, the largest " << largest_page << " bytes"
            << std::endl;

  const HttpAnswer whole = http_request(port_, "GET", "/v1/quarantine/" + std::to_string(big_id));
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_GT(parse_object(whole.body)["raw"].as_string().size(), 8192u);
  EXPECT_EQ(http_request(port_, "GET", "/v1/quarantine/999999").status, 404);
  EXPECT_EQ(http_request(port_, "GET", "/v1/quarantine?after=x").status, 400);
}

// A webhook run for a pipeline another process holds waits for it (looking again on a timer
// of serve's io_context, holding no thread) and runs once it is free; a stop while it waits
// cancels the wait and records the run as failed.
TEST_F(ServeApiTest, AWebhookRunWaitsForAPipelineHeldElsewhereAndAStopEndsTheWait) {
  const std::string lock = "hashtextextended('tidemark pipeline " + std::string(kPipeline) + "', 0)";
  auto holder = db_.connect();
  pqxx::nontransaction(*holder).exec("SELECT pg_advisory_lock(" + lock + ")");
  start(1000);
  const HttpAnswer first = trigger("msg-busy-1");
  ASSERT_EQ(first.status, 202) << first.body;
  const std::int64_t first_id = parse_object(first.body)["run_id"].as_int64();
  std::this_thread::sleep_for(2500ms);  // two looks at least (one a second): it still waits
  EXPECT_EQ(db_.scalar("SELECT status FROM runs WHERE id = " + std::to_string(first_id)), "queued");
  pqxx::nontransaction(*holder).exec("SELECT pg_advisory_unlock(" + lock + ")");
  EXPECT_EQ(wait_for_run(first_id)["status"], "succeeded");

  pqxx::nontransaction(*holder).exec("SELECT pg_advisory_lock(" + lock + ")");
  const HttpAnswer second = trigger("msg-busy-2");
  ASSERT_EQ(second.status, 202) << second.body;
  const std::int64_t second_id = parse_object(second.body)["run_id"].as_int64();
  stop();
  EXPECT_EQ(exit_code_, 0);
  EXPECT_EQ(db_.scalar("SELECT status || ': ' || error FROM runs WHERE id = " + std::to_string(second_id)),
            "failed: tidemark serve stopped before the run could start");
}

TEST_F(ServeApiTest, ThePipelineListSaysWhenTheScheduleRunsNext) {
  extra_yaml_ = "  unscheduled:\n    source: {path: " + (directory_ / "in.csv").string() + "}\n";
  start(1, 1000, std::nullopt, "{cron: \"0 3 1 1 *\"}");
  // 03:00 UTC on the next 1 January.
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  const int year = 1900 + utc.tm_year + (utc.tm_yday == 0 && utc.tm_hour < 3 ? 0 : 1);
  const std::string expected = std::to_string(year) + "-01-01T03:00:00.000000Z";
  // The event: serve's schedule loop has begun (it sets the tick before its first wait).
  std::map<std::string, std::string> next;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (next["transactions"] != expected && std::chrono::steady_clock::now() < deadline) {
    const HttpAnswer answer = http_request(port_, "GET", "/v1/pipelines");
    ASSERT_EQ(answer.status, 200) << answer.body;
    const boost::json::value list = boost::json::parse(answer.body);
    for (const auto& entry : list.as_array()) {
      const auto& at = entry.at("next_run_at");
      next[std::string(entry.at("name").as_string())] = at.is_string() ? std::string(at.as_string()) : serialize(at);
    }
  }
  EXPECT_EQ(next["transactions"], expected);
  EXPECT_EQ(next["unscheduled"], "null");
}

// Stopping is cancelling what waits on serve's io_context: a stop asked for before run()
// began (a signal in the first instant) must not leave a schedule's timer waiting for its
// first tick, months away.
TEST_F(ServeApiTest, AStopAskedBeforeServeRunsEndsItWithoutWaitingForTheSchedule) {
  write_source(directory_ / "in.csv", 10);
  ServeOptions options;
  options.config = app::config::parse_config("pipelines:\n  transactions:\n    source: {path: " +
                                              (directory_ / "in.csv").string() + "}\n    schedule: {cron: \"0 3 1 1 *\"}\n",
                                          "serve-test.yaml");
  options.database_url = db_.url();
  options.listen = "127.0.0.1:0";
  Service service(std::move(options));
  service.request_stop();
  std::promise<int> exit_code;
  std::thread serve([&] { exit_code.set_value(service.run()); });
  auto finished = exit_code.get_future();
  if (finished.wait_for(30s) != std::future_status::ready) {
    ADD_FAILURE() << "serve still waits for its schedule 30 s after the stop";
    std::_Exit(1);  // the serve thread cannot be joined
  }
  EXPECT_EQ(finished.get(), 0);
  serve.join();
}

}  // namespace
}  // namespace tidemark::app::serve
