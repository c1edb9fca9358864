// Run history and pipeline status over serve's HTTP API, in-process
// against a real PostgreSQL over real HTTP on 127.0.0.1: GET /v1/runs newest first with the
// ledger's counts, a page at a time through `before`, its filters and the 400s that name
// the parameter at fault; GET /v1/pipelines/{name} with the status document of
// `tidemark status --json`, 404 for an unknown pipeline; both behind the API token.
#include <gtest/gtest.h>

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "app/serve/service.hpp"
#include "connectors/http/signature.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::app::serve {
namespace {

using namespace std::chrono_literals;
using testing::HttpAnswer;
using testing::http_request;
using testing::TestDatabase;

constexpr char kSecret[] = "whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ=";

std::string key() { return *connectors::http::decode_secret(kSecret); }

class ServeStatusApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("tidemark-serve-status-" + std::to_string(::getpid()) + "-" + db_.name());
    std::filesystem::create_directories(directory_);
    // Pipeline a: three valid records, one invalid, two in conflict. Pipeline b: one record.
    std::ofstream(directory_ / "a.csv") << "transaction_id,source_revision,amount,account_id\n"
                                        << "a1,1,1.00,x\na2,1,2.00,x\na3,1,3.00,y\n"
                                        << "a4,1,oops,y\na5,1,5.00,y\na5,1,5.50,y\n";
    std::ofstream(directory_ / "b.csv") << "transaction_id,source_revision,amount,account_id\nb1,1,1.00,z\n";
  }

  void TearDown() override {
    if (service_) {
      service_->request_stop();
      thread_.join();
    }
    std::filesystem::remove_all(directory_);
  }

  void start(std::optional<std::string> api_token = std::nullopt) {
    const std::string yaml =
        "pipelines:\n"
        "  a:\n    source: {path: " + (directory_ / "a.csv").string() + "}\n"
        "    destinations:\n      - {name: ledger, kind: http, url: http://127.0.0.1:9/x, secret_env: SOME_VAR}\n"
        "  b:\n    source: {path: " + (directory_ / "b.csv").string() + "}\n";
    ServeOptions options;
    options.config = app::config::parse_config(yaml, "serve-status-test.yaml");
    options.database_url = db_.url();
    options.listen = "127.0.0.1:0";
    options.api.webhook_key = key();
    options.api.api_token = std::move(api_token);
    options.run_relay = false;  // the events stay pending, for the status to show
    service_ = std::make_unique<Service>(std::move(options));
    port_ = service_->port();
    thread_ = std::thread([this] { service_->run(); });
  }

  // Triggers a run of `pipeline` and waits until it has finished; returns its id.
  std::int64_t run(const std::string& pipeline, const std::string& mode = "resume") {
    const std::string body = R"({"mode":")" + mode + R"("})";
    const std::string id = "status-test-" + std::to_string(++requests_);
    const std::int64_t timestamp = std::time(nullptr);
    const HttpAnswer answer =
        http_request(port_, "POST", "/v1/pipelines/" + pipeline + "/runs",
                     {{"webhook-id", id},
                      {"webhook-timestamp", std::to_string(timestamp)},
                      {"webhook-signature", connectors::http::sign(key(), id, timestamp, body)}},
                     body);
    EXPECT_EQ(answer.status, 202) << answer.body;
    const std::int64_t run_id = boost::json::parse(answer.body).at("run_id").to_number<std::int64_t>();
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (db_.scalar("SELECT status FROM runs WHERE id = " + std::to_string(run_id)) != "succeeded" &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    EXPECT_EQ(db_.scalar("SELECT status FROM runs WHERE id = " + std::to_string(run_id)), "succeeded");
    return run_id;
  }

  boost::json::object get(const std::string& target, int status = 200) {
    const HttpAnswer answer = http_request(port_, "GET", target);
    EXPECT_EQ(answer.status, status) << target << ": " << answer.body;
    return boost::json::parse(answer.body).as_object();
  }

  std::vector<std::int64_t> ids_of(const boost::json::object& page) {
    std::vector<std::int64_t> ids;
    for (const auto& run : page.at("runs").as_array()) ids.push_back(run.at("run_id").to_number<std::int64_t>());
    return ids;
  }

  TestDatabase db_;
  std::filesystem::path directory_;
  std::unique_ptr<Service> service_;
  std::thread thread_;
  unsigned short port_ = 0;
  int requests_ = 0;
};

TEST_F(ServeStatusApiTest, RunsAreListedNewestFirstWithTheirLedgerCountsAndPagedThroughBefore) {
  start();
  std::vector<std::int64_t> started;
  for (const char* pipeline : {"a", "b", "a", "b", "a"}) started.push_back(run(pipeline, "replay"));

  // Pages of two, following `next` to the end, give every run once, newest first.
  std::vector<std::int64_t> listed;
  std::string target = "/v1/runs?limit=2";
  int pages = 0;
  for (; !target.empty(); ++pages) {
    const auto page = get(target);
    const auto ids = ids_of(page);
    EXPECT_LE(ids.size(), 2u);
    listed.insert(listed.end(), ids.begin(), ids.end());
    target = page.at("next").is_null() ? "" : std::string(page.at("next").as_string());
    if (!target.empty()) {
      EXPECT_EQ(target, "/v1/runs?limit=2&before=" + std::to_string(ids.back()));
    }
  }
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(listed, std::vector<std::int64_t>(started.rbegin(), started.rend()));

  // Each run carries its counts from the ledger: a's runs replay 6 records, 3 inserted the
  // first time, then unchanged.
  const auto first_a = get("/v1/runs?pipeline=a&limit=500");
  ASSERT_EQ(ids_of(first_a), (std::vector<std::int64_t>{started[4], started[2], started[0]}));
  EXPECT_TRUE(first_a.at("next").is_null());
  const auto& oldest = first_a.at("runs").as_array().back().as_object();
  EXPECT_EQ(oldest.at("pipeline").as_string(), "a");
  EXPECT_EQ(oldest.at("trigger").as_string(), "webhook");
  EXPECT_EQ(oldest.at("mode").as_string(), "replay");
  EXPECT_EQ(oldest.at("status").as_string(), "succeeded");
  EXPECT_EQ(oldest.at("input").to_number<std::int64_t>(), 6);
  EXPECT_EQ(oldest.at("inserted").to_number<std::int64_t>(), 3);
  EXPECT_EQ(oldest.at("invalid").to_number<std::int64_t>(), 1);
  EXPECT_EQ(oldest.at("conflict").to_number<std::int64_t>(), 2);
  EXPECT_GE(oldest.at("duration_ms").to_number<std::int64_t>(), 0);
  const auto& newest = first_a.at("runs").as_array().front().as_object();
  EXPECT_EQ(newest.at("unchanged").to_number<std::int64_t>(), 3);
  EXPECT_EQ(std::to_string(newest.at("input").to_number<std::int64_t>()),
            db_.scalar("SELECT sum(input) FROM batch_ledger WHERE run_id = " + std::to_string(started[4])));

  // Filters combine with the cursor, and the `next` link keeps them.
  const auto b_page = get("/v1/runs?pipeline=b&status=succeeded&limit=1");
  EXPECT_EQ(ids_of(b_page), std::vector<std::int64_t>{started[3]});
  EXPECT_EQ(b_page.at("next").as_string(),
            "/v1/runs?limit=1&before=" + std::to_string(started[3]) + "&pipeline=b&status=succeeded");
  EXPECT_EQ(ids_of(get(std::string(b_page.at("next").as_string()))), std::vector<std::int64_t>{started[1]});
  EXPECT_EQ(ids_of(get("/v1/runs?before=" + std::to_string(started[2]))),
            (std::vector<std::int64_t>{started[1], started[0]}));
  EXPECT_TRUE(ids_of(get("/v1/runs?status=failed")).empty());
  EXPECT_TRUE(ids_of(get("/v1/runs?pipeline=nope")).empty());
}

TEST_F(ServeStatusApiTest, RunsAnswer50ByDefaultAndAtMost500) {
  start();
  // History as a long-lived installation has it (the runs' own shape is tested above).
  db_.scalar("INSERT INTO runs (pipeline, trigger, mode, status) "
             "SELECT 'a', 'cli', 'resume', 'succeeded' FROM generate_series(1, 520)");
  const auto page = get("/v1/runs");
  EXPECT_EQ(ids_of(page).size(), 50u);
  EXPECT_FALSE(page.at("next").is_null());
  EXPECT_EQ(ids_of(get("/v1/runs?limit=500")).size(), 500u);
}

TEST_F(ServeStatusApiTest, BadQueryValuesAre400NamingTheParameter) {
  start();
  const std::vector<std::pair<std::string, std::string>> cases{
      {"limit=0", "limit must be an integer from 1 to 500"},
      {"limit=501", "limit must be an integer from 1 to 500"},
      {"limit=ten", "limit must be an integer from 1 to 500"},
      {"before=0", "before must be a positive integer"},
      {"before=-3", "before must be a positive integer"},
      {"status=done", "status must be one of queued, running, succeeded, stopped, failed"},
      {"page=2", "unknown query parameter \"page\" (expected pipeline, status, limit, before)"},
  };
  for (const auto& [query, message] : cases) {
    const auto body = get("/v1/runs?" + query, 400);
    EXPECT_NE(std::string(body.at("error").as_string()).find(message), std::string::npos)
        << query << ": " << body.at("error");
  }
}

TEST_F(ServeStatusApiTest, PipelineStatusShowsTheLastRunCheckpointQuarantineAndPendingEventsAnd404OnlyForAnUnknownOne) {
  start();
  run("a");
  const std::int64_t last = run("a");  // nothing new: the last run reads nothing
  const auto status = get("/v1/pipelines/a");
  EXPECT_EQ(status.at("pipeline").as_string(), "a");
  EXPECT_EQ(status.at("configured").as_bool(), true);
  EXPECT_EQ(status.at("last_run").at("run_id").to_number<std::int64_t>(), last);
  EXPECT_EQ(status.at("last_run").at("input").to_number<std::int64_t>(), 0);
  const auto& checkpoints = status.at("checkpoints").as_array();
  ASSERT_EQ(checkpoints.size(), 1u);
  EXPECT_EQ(checkpoints[0].at("position").as_string(),
            "a.csv:" + std::to_string(std::filesystem::file_size(directory_ / "a.csv")));
  EXPECT_EQ(status.at("open_quarantine").to_number<std::int64_t>(), 3);
  const auto& destinations = status.at("destinations").as_array();
  ASSERT_EQ(destinations.size(), 1u);
  EXPECT_EQ(destinations[0].at("name").as_string(), "ledger");
  EXPECT_EQ(destinations[0].at("pending").to_number<std::int64_t>(), 3);
  EXPECT_EQ(destinations[0].at("dead").to_number<std::int64_t>(), 0);

  const auto never_ran = get("/v1/pipelines/b");
  EXPECT_TRUE(never_ran.at("last_run").is_null());
  EXPECT_TRUE(never_ran.at("checkpoints").as_array().empty());
  EXPECT_TRUE(never_ran.at("destinations").as_array().empty());

  // A pipeline removed from the config is still known by what it left in the database.
  db_.scalar("INSERT INTO runs (pipeline, trigger, mode, status) VALUES ('gone', 'cli', 'resume', 'failed')");
  const auto gone = get("/v1/pipelines/gone");
  EXPECT_EQ(gone.at("configured").as_bool(), false);
  EXPECT_EQ(gone.at("last_run").at("status").as_string(), "failed");

  const HttpAnswer unknown = http_request(port_, "GET", "/v1/pipelines/nope");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.body, "{\"error\":\"no pipeline named \\\"nope\\\" in the config or the database\"}\n");
}

TEST_F(ServeStatusApiTest, BothRoutesNeedTheBearerTokenWhenOneIsSet) {
  start("s3cret");
  for (const char* target : {"/v1/runs", "/v1/pipelines/a", "/v1/pipelines/nope"}) {
    EXPECT_EQ(http_request(port_, "GET", target).status, 401) << target;
    EXPECT_EQ(http_request(port_, "GET", target, {{"Authorization", "Bearer wrong!"}}).status, 401) << target;
  }
  EXPECT_EQ(http_request(port_, "GET", "/v1/runs", {{"Authorization", "Bearer s3cret"}}).status, 200);
  EXPECT_EQ(http_request(port_, "GET", "/v1/pipelines/a", {{"Authorization", "Bearer s3cret"}}).status, 200);
  EXPECT_EQ(http_request(port_, "POST", "/v1/runs", {{"Authorization", "Bearer s3cret"}}).status, 405);
}

}  // namespace
}  // namespace tidemark::app::serve
