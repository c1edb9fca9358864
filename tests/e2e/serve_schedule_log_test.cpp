// A schedule's interval as the config writes it, end to end: `serve` logs
// `every 60s` (not `every 1m` or `every 60000ms`), and GET /v1/pipelines lists the same text.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <boost/json.hpp>

#include "tests/support/http_client.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::testing {
namespace {

using namespace std::chrono_literals;

TEST(ServeScheduleLogTest, ServeLogsAndListsEveryAsTheConfigWritesIt) {
  TestDatabase db;
  const auto directory =
      std::filesystem::temp_directory_path() / ("tidemark-schedule-e2e-" + std::to_string(::getpid()) + "-" + db.name());
  std::filesystem::create_directories(directory);
  std::ofstream(directory / "in.csv") << "transaction_id,source_revision,amount,account_id\ntx-1,1,1.00,acct-1\n";
  const auto config = directory / "tidemark.yaml";
  std::ofstream(config) << "pipelines:\n  transactions:\n    source: {path: " << (directory / "in.csv").string()
                        << "}\n    schedule: {every: 60s}\n";

  const unsigned short port = free_port();
  ProcessOptions options;
  options.env = {{"TIDEMARK_DATABASE_URL", db.url()}, {"TIDEMARK_API_TOKEN", std::nullopt}};
  auto serve = start_tidemark({"serve", "--config", config.string(), "--listen", "127.0.0.1:" + std::to_string(port)},
                              options);
  HttpAnswer answer;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while ((answer = http_request(port, "GET", "/v1/pipelines", {}, "", 1s)).status != 200 &&
         std::chrono::steady_clock::now() < deadline && serve->running()) {
    std::this_thread::sleep_for(20ms);
  }
  serve->kill(SIGTERM);
  const ProcessResult result = serve->wait();
  std::filesystem::remove_all(directory);

  ASSERT_EQ(answer.status, 200) << result.err;
  const boost::json::value list = boost::json::parse(answer.body);
  const auto& pipelines = list.as_array();
  ASSERT_EQ(pipelines.size(), 1u) << answer.body;
  EXPECT_EQ(pipelines[0].at("schedule"), "every 60s") << answer.body;
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("pipeline transactions: runs every 60s"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("every 1m"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace tidemark::testing
