// An http source's URL with credentials and an api_key in its query was
// shown whole by GET /v1/pipelines. Every answer that can carry a source's URL (the source
// itself; positions, which hold the next page's URL when a source follows Link headers; run
// errors) shows it redacted, as run messages are; so do the documents `tidemark status`
// prints (app/status), which the console reads through the same routes. A quarantined
// record's raw text is data and is shown as it is. In-process against a real PostgreSQL
// over real HTTP on 127.0.0.1.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include <boost/json.hpp>
#include <pqxx/pqxx>

#include "app/serve/service.hpp"
#include "app/status/status.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::app::serve {
namespace {

using testing::HttpAnswer;
using testing::http_request;
using testing::TestDatabase;

constexpr char kPassword[] = "PASSW0RD";
constexpr char kApiKey[] = "K3Y-s3cret";
// As the config has it, and as a Link header hands the next page back (same credentials and key).
const std::string kSourceUrl =
    std::string("http://u:") + kPassword + "@127.0.0.1:9/items?since={checkpoint}&api_key=" + kApiKey;
const std::string kNextPage = std::string("http://u:") + kPassword + "@127.0.0.1:9/items?page=4&api_key=" + kApiKey;
const std::string kPosition = R"({"page":3,"cursor":")" + kNextPage + R"(","consumed":2})";
const std::string kShownPosition = R"({"page":3,"cursor":"http://***@127.0.0.1:9/items?***","consumed":2})";
// A record's own text: shown as received, URL and all.
constexpr char kRaw[] = R"({"id":"o1","link":"https://shop.example/o1?ref=mail"})";

class ServeUrlRedactionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServeOptions options;
    options.config = app::config::parse_config(
        "pipelines:\n  h:\n    source: {kind: http, url: \"" + kSourceUrl + "\", records: data, next: {link_header: next}}\n",
        "url-redaction-test.yaml");
    options.database_url = db_.url();
    options.listen = "127.0.0.1:0";
    options.run_relay = false;
    service_ = std::make_unique<Service>(std::move(options));
    port_ = service_->port();
    thread_ = std::thread([this] { service_->run(); });

    // What a run of the source leaves behind (written here: the source's API is not there).
    run_id_ = db_.scalar("INSERT INTO runs (pipeline, trigger, mode, status, started_at, finished_at, error) "
                         "VALUES ('h', 'cli', 'resume', 'failed', now(), now(), 'GET " + kNextPage +
                         " (page 4): connection refused') RETURNING id");
    db_.scalar("INSERT INTO batch_ledger (pipeline, run_id, batch_no, source, start_position, end_position, input, "
               "inserted, updated, unchanged, stale, superseded, duplicate, invalid, conflict) VALUES ('h', " +
               run_id_ + ", 1, 'http://***@127.0.0.1:9/items?***', '', '" + kPosition +
               "', 1, 0, 0, 0, 0, 0, 0, 1, 0) RETURNING id");
    db_.scalar("INSERT INTO checkpoint (pipeline, source, position, run_id) VALUES ('h', "
               "'http://***@127.0.0.1:9/items?***', '" + kPosition + "', " + run_id_ + ") RETURNING pipeline");
    quarantine_id_ = db_.scalar(
        "INSERT INTO quarantine (pipeline, source, reason, detail, raw, format, position, run_id) VALUES ('h', "
        "'http://***@127.0.0.1:9/items?***', 'invalid', 'amount: missing', '" + std::string(kRaw) + "', 'json', '" +
        kPosition + "', " + run_id_ + ") RETURNING id");
  }

  void TearDown() override {
    service_->request_stop();
    thread_.join();
  }

  std::string get(const std::string& target) {
    const HttpAnswer answer = http_request(port_, "GET", target);
    EXPECT_EQ(answer.status, 200) << target << ": " << answer.body;
    return answer.body;
  }

  static void expect_no_secret(const std::string& shown, const std::string& where) {
    EXPECT_EQ(shown.find(kPassword), std::string::npos) << where << ": " << shown;
    EXPECT_EQ(shown.find(kApiKey), std::string::npos) << where << ": " << shown;
  }

  TestDatabase db_;
  std::unique_ptr<Service> service_;
  std::thread thread_;
  unsigned short port_ = 0;
  std::string run_id_;
  std::string quarantine_id_;
};

TEST_F(ServeUrlRedactionTest, NoApiAnswerShowsTheSourceUrlsCredentialsOrQuery) {
  for (const std::string& target :
       {std::string("/v1/pipelines"), std::string("/v1/pipelines/h"), std::string("/v1/runs"),
        "/v1/runs/" + run_id_, std::string("/v1/quarantine"), "/v1/quarantine/" + quarantine_id_}) {
    expect_no_secret(get(target), target);
  }

  const auto pipelines = boost::json::parse(get("/v1/pipelines")).as_array();
  ASSERT_EQ(pipelines.size(), 1u);
  EXPECT_EQ(pipelines[0].at("source").at("url").as_string(), "http://***@127.0.0.1:9/items?***");
  EXPECT_EQ(pipelines[0].at("checkpoints").at(0).at("position").as_string(), kShownPosition);
  const auto run = boost::json::parse(get("/v1/runs/" + run_id_));
  EXPECT_EQ(run.at("checkpoint").as_string(), kShownPosition);
  EXPECT_EQ(run.at("error").as_string(), "GET http://***@127.0.0.1:9/items?*** (page 4): connection refused");
  const auto entry = boost::json::parse(get("/v1/quarantine/" + quarantine_id_));
  EXPECT_EQ(entry.at("position").as_string(), kShownPosition);
  EXPECT_EQ(entry.at("raw").as_string(), kRaw);
  const auto listed = boost::json::parse(get("/v1/quarantine"));
  EXPECT_EQ(listed.at("entries").at(0).at("raw").as_string(), kRaw);
}

// `tidemark status` (text and --json) prints these documents.
TEST_F(ServeUrlRedactionTest, TheStatusDocumentsShowPositionsAndErrorsRedacted) {
  pqxx::connection connection(db_.url());
  const auto shown = status::pipeline_status(connection, nullptr, "h");
  ASSERT_TRUE(shown.has_value());
  expect_no_secret(boost::json::serialize(*shown), "pipeline_status");
  EXPECT_EQ(shown->at("checkpoints").at(0).at("position").as_string(), kShownPosition);
  expect_no_secret(boost::json::serialize(status::list_runs(connection, status::RunFilter{"h"})), "list_runs");
}

}  // namespace
}  // namespace tidemark::app::serve
