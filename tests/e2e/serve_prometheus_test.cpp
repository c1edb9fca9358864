// Monitoring end to end: the real `prometheus` binary scrapes a real `tidemark
// serve` and answers queries with the ledger's counts; docker/'s Prometheus config, alert
// rules and Grafana dashboard pass promtool and name only metrics the service exports.
// Tests that need prometheus or promtool skip when the binary is not installed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <boost/json.hpp>

#include "connectors/http/signature.hpp"
#include "pipeline/core/percent_encode.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kWebhookSecret[] = "whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ=";

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every metric family declared in metrics/ (one place, STYLE habit 8), read from its
// source: families without series yet do not show in a scrape. Histograms add _bucket,
// _sum and _count.
std::set<std::string> exported_names() {
  const std::string source = read_file(std::filesystem::path(TIDEMARK_SOURCE_DIR) / "metrics/metrics.cpp");
  const std::regex declared(R"re(\.Name\("(tidemark_[a-z_]+)"\))re");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), declared); it != std::sregex_iterator(); ++it) {
    names.insert((*it)[1]);
    for (const char* suffix : {"_bucket", "_sum", "_count"}) names.insert((*it)[1].str() + suffix);
  }
  EXPECT_GE(names.size(), 9u * 4) << "metrics/metrics.cpp no longer declares its families with .Name(\"…\")";
  return names;
}

void expect_only_exported_metrics(const std::string& text, const std::string& where) {
  static const std::set<std::string> kExported = exported_names();
  const std::regex name("tidemark_[a-z_]+");
  int found = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator(); ++it, ++found) {
    EXPECT_TRUE(kExported.count(it->str())) << where << " names " << it->str() << ", which tidemark does not export";
  }
  EXPECT_GT(found, 0) << where << " names no tidemark metric";
}

TEST(ServeMonitoringFilesTest, PromtoolAcceptsThePrometheusConfigAndTheAlertRules) {
  const std::string promtool = find_program("promtool");
  if (promtool.empty()) GTEST_SKIP() << "promtool is not installed (Debian package prometheus)";
  const std::filesystem::path docker = std::filesystem::path(TIDEMARK_SOURCE_DIR) / "docker";
  const ProcessResult config = run_process(promtool, {"check", "config", (docker / "prometheus.yml").string()});
  EXPECT_EQ(config.exit_code, 0) << config.out << config.err;
  const ProcessResult rules = run_process(promtool, {"check", "rules", (docker / "alerts.yml").string()});
  EXPECT_EQ(rules.exit_code, 0) << rules.out << rules.err;
}

TEST(ServeMonitoringFilesTest, AlertRulesAndEveryDashboardQueryNameOnlyExportedMetrics) {
  const std::filesystem::path docker = std::filesystem::path(TIDEMARK_SOURCE_DIR) / "docker";
  expect_only_exported_metrics(read_file(docker / "alerts.yml"), "alerts.yml");

  boost::system::error_code error;
  const auto dashboard = boost::json::parse(read_file(docker / "grafana/dashboards/tidemark.json"), error);
  ASSERT_FALSE(error) << "the dashboard is not JSON: " << error.message();
  int queries = 0;
  for (const auto& panel : dashboard.at("panels").as_array()) {
    for (const auto& target : panel.at("targets").as_array()) {
      const std::string expr(target.at("expr").as_string());
      expect_only_exported_metrics(expr, "panel \"" + std::string(panel.at("title").as_string()) + "\"");
      ++queries;
    }
  }
  EXPECT_GE(queries, 8);
}

TEST(ServePrometheusTest, PrometheusScrapingServeReportsTheLedgersAcceptedAndRejectedCounts) {
  const std::string prometheus = find_program("prometheus");
  if (prometheus.empty()) GTEST_SKIP() << "prometheus is not installed (Debian package prometheus)";
  TestDatabase db;
  const auto directory = std::filesystem::temp_directory_path() /
                         ("tidemark-serve-prometheus-" + std::to_string(::getpid()) + "-" + db.name());
  std::filesystem::create_directories(directory);

  // Valid records, one invalid, one conflicting pair in one batch, and a stale revision.
  {
    std::ofstream source(directory / "in.csv");
    source << "transaction_id,source_revision,amount,account_id\n";
    for (int i = 0; i < 500; ++i) source << "tx-" << i << ",2," << i << ".50,acct-" << i % 5 << "\n";
    source << "tx-bad,1,12.345,acct-1\n"
           << "tx-pair,1,1.00,acct-2\n"
           << "tx-pair,1,2.00,acct-2\n"
           << "tx-7,1,7.00,acct-2\n";
    std::ofstream config(directory / "tidemark.yaml");
    config << "pipelines:\n  transactions:\n    source: {path: " << (directory / "in.csv").string()
           << "}\n    batch_size: 100\n    schedule: {every: 1h}\n";
  }
  const unsigned short serve_port = free_port();
  ProcessOptions options;
  options.env = {{"TIDEMARK_DATABASE_URL", db.url()}, {"TIDEMARK_WEBHOOK_SECRET", kWebhookSecret}};
  auto serve = start_tidemark({"serve", "--config", (directory / "tidemark.yaml").string(), "--listen",
                               "127.0.0.1:" + std::to_string(serve_port)},
                              options);

  // The scheduled run (`every` runs at start-up), then a webhook-triggered replay.
  auto wait_for_runs = [&](int succeeded) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::stoi(db.scalar("SELECT count(*) FROM runs WHERE status = 'succeeded'")) < succeeded &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    ASSERT_EQ(std::stoi(db.scalar("SELECT count(*) FROM runs WHERE status = 'succeeded'")), succeeded);
  };
  wait_for_runs(1);
  const std::string body = R"({"mode":"replay","reason":"prometheus e2e"})";
  const std::int64_t now = std::time(nullptr);
  const std::string key = *connectors::http::decode_secret(kWebhookSecret);
  const HttpAnswer triggered =
      http_request(serve_port, "POST", "/v1/pipelines/transactions/runs",
                   {{"webhook-id", "msg-prometheus"}, {"webhook-timestamp", std::to_string(now)},
                    {"webhook-signature", connectors::http::sign(key, "msg-prometheus", now, body)}},
                   body);
  ASSERT_EQ(triggered.status, 202) << triggered.body;
  wait_for_runs(2);
  EXPECT_EQ(db.scalar("SELECT string_agg(trigger, ',' ORDER BY id) FROM runs"), "schedule,webhook");

  const unsigned short prometheus_port = free_port();
  {
    std::ofstream config(directory / "prometheus.yml");
    config << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
           << "scrape_configs:\n  - job_name: tidemark\n    static_configs:\n      - targets: ['127.0.0.1:" << serve_port
           << "']\n";
  }
  auto server = std::make_unique<Process>(
      prometheus, std::vector<std::string>{"--config.file=" + (directory / "prometheus.yml").string(),
                                           "--storage.tsdb.path=" + (directory / "prometheus-data").string(),
                                           "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port)});

  const std::string accepted = db.scalar("SELECT sum(inserted + updated) FROM batch_ledger");
  const std::string rejected = db.scalar("SELECT sum(invalid + conflict) FROM batch_ledger");
  const std::string unchanged = db.scalar("SELECT sum(unchanged) FROM batch_ledger");
  ASSERT_EQ(accepted, "500");
  ASSERT_EQ(rejected, "6");  // tx-bad and the pair, in each of the two runs
  ASSERT_EQ(unchanged, "500");

  // sum(...) as Prometheus answers it now; "" until it has scraped.
  auto query = [&](const std::string& promql) -> std::string {
    const std::string target = "/api/v1/query?query=" + pipeline::percent_encode(promql, pipeline::is_url_unreserved);
    const HttpAnswer answer = http_request(prometheus_port, "GET", target, {}, "", 5s);
    if (answer.status != 200) return "";
    const auto result = boost::json::parse(answer.body).at("data").at("result").as_array();
    if (result.empty()) return "";
    return std::string(result[0].at("value").as_array()[1].as_string());
  };
  const std::string selector = R"(tidemark_records_total{job="tidemark",pipeline="transactions",outcome=~")";
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  std::string got_accepted;
  std::string got_rejected;
  std::string got_unchanged;
  while (std::chrono::steady_clock::now() < deadline) {
    got_accepted = query("sum(" + selector + "inserted|updated\"})");
    got_rejected = query("sum(" + selector + "invalid|conflict\"})");
    got_unchanged = query("sum(" + selector + "unchanged\"})");
    if (got_accepted == accepted && got_rejected == rejected && got_unchanged == unchanged) break;
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_EQ(got_accepted, accepted);
  EXPECT_EQ(got_rejected, rejected);
  EXPECT_EQ(got_unchanged, unchanged);
  EXPECT_EQ(query(R"(sum(tidemark_runs_total{job="tidemark",status="succeeded"}))"), "2");
  EXPECT_EQ(query(R"(tidemark_webhook_requests_total{job="tidemark",result="accepted"})"), "1");

  server.reset();  // SIGKILL: its temporary storage goes with the folder
  serve->kill(SIGTERM);
  EXPECT_EQ(serve->wait().exit_code, 0);
  std::filesystem::remove_all(directory);
}

}  // namespace
}  // namespace tidemark::testing
