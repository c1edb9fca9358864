// The operator console in a real browser: a real PostgreSQL, a real
// `tidemark serve` process and Debian's chromium driven by playwright-core
// (tests/browser/console.test.mjs). The pipeline's input holds a conflict and an invalid
// record; its webhook destination answers 410 Gone (a client error: dead at once) until the page
// is opened. The page must show the database's numbers, fit the runs table into 1280 px, label
// the chart's time axis in UTC, release a quarantined record into the table (and then offer
// its twin, which conflicts with the stored row, no Release) and retry a dead letter into the
// receiver, at 1280 and 390 px wide (screenshots in the test's output folder); and, from a
// serve that needs no token, load everything on open. Without node, chromium or tests/browser/node_modules the
// test fails, saying what to install: CI has them (scripts/setup).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <boost/json.hpp>

#include "tests/support/http_client.hpp"
#include "tests/support/process.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"
#include "tests/support/test_receiver.hpp"

namespace tidemark::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kSecret[] = "whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ=";  // "tidemark-test-secret"
constexpr char kToken[] = "console-browser-token";
constexpr char kChromium[] = "/usr/bin/chromium";

// Where the screenshots go: $TIDEMARK_TEST_OUTPUT_DIR, else test-output/ beside the binary
// under test (build/test-output), wherever the test runs from.
std::filesystem::path output_folder() {
  const char* configured = std::getenv("TIDEMARK_TEST_OUTPUT_DIR");
  const std::filesystem::path base = configured != nullptr && *configured != '\0'
                                         ? std::filesystem::path(configured)
                                         : std::filesystem::path(TIDEMARK_BINARY).parent_path() / "test-output";
  return base / "console_browser";
}

class ConsoleBrowserTest : public ::testing::Test {
 protected:
  int count(const std::string& sql) const { return std::stoi(db_.scalar(sql)); }

  bool wait_until(const std::string& sql, const std::string& expected, std::chrono::seconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (db_.scalar(sql) != expected) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(50ms);
    }
    return true;
  }

  // Whether serve on `port` answers GET /healthz 200 within `timeout`.
  static bool wait_for_health(unsigned short port, std::chrono::seconds timeout = 30s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (http_request(port, "GET", "/healthz", {}, "", 1s).status != 200) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(50ms);
    }
    return true;
  }

  TestDatabase db_;
  TempDir dir_;
  TestReceiver receiver_{kSecret};
};

TEST_F(ConsoleBrowserTest, ThePageShowsTheDatabasesNumbersReleasesARecordAndRetriesADeadLetter) {
  const std::string node = find_program("node");
  ASSERT_FALSE(node.empty()) << "node is not installed: scripts/setup installs it (Debian package nodejs)";
  ASSERT_TRUE(std::filesystem::exists(kChromium)) << kChromium << " is missing: scripts/setup installs it (chromium)";
  const std::filesystem::path browser_tests = std::filesystem::path(TIDEMARK_SOURCE_DIR) / "tests" / "browser";
  ASSERT_TRUE(std::filesystem::exists(browser_tests / "node_modules" / "playwright-core"))
      << "playwright-core is not installed: run scripts/setup (npm ci --prefix tests/browser)";

  // t1 revision 1 twice with different amounts: both are conflicts, nothing is stored for t1.
  const auto source = dir_.write("in.csv",
                                 "transaction_id,source_revision,amount,account_id\n"
                                 "t1,1,10.50,acct-1\nt2,1,2.00,acct-1\nt1,1,99.00,acct-1\n"
                                 "t3,1,3.00,acct-2\nt4,1,bad,acct-2\nt5,1,5.00,acct-3\n");
  const auto config = dir_.write("tidemark.yaml", "pipelines:\n  payments:\n    source: {path: " + source.string() +
                                                      "}\n    destinations:\n      - {name: ledger, kind: http, url: " +
                                                      receiver_.url() + ", secret_env: CONSOLE_LEDGER_SECRET}\n");
  ProcessOptions options;
  options.env = {{"TIDEMARK_DATABASE_URL", db_.url()},
                 {"CONSOLE_LEDGER_SECRET", kSecret},
                 {"TIDEMARK_API_TOKEN", kToken}};
  const ProcessResult load = run_tidemark({"run", "--pipeline", "payments", "--config", config.string()}, options);
  ASSERT_EQ(load.exit_code, 0) << load.err;
  ASSERT_EQ(count("SELECT count(*) FROM quarantine"), 3) << "two conflicts and one invalid record";

  receiver_.fail_always(Failure::kGone);
  const unsigned short port = free_port();
  auto serve = start_tidemark({"serve", "--config", config.string(), "--listen", "127.0.0.1:" + std::to_string(port)},
                              options);
  ASSERT_TRUE(wait_until("SELECT count(*) FROM outbox WHERE status = 'dead'", "3", 30s))
      << "serve's relay did not kill the three events: " << db_.scalar("SELECT count(*) FROM outbox") << " events";
  ASSERT_TRUE(serve->running());
  receiver_.fail_always(Failure::kNone);

  // What the database says before the page acts.
  const int open_quarantine = count("SELECT count(*) FROM quarantine WHERE released_at IS NULL");
  const int dead = count("SELECT count(*) FROM outbox WHERE status = 'dead'");
  const std::string run_id = db_.scalar("SELECT max(id) FROM runs");
  const auto ledger = [&](const std::string& column) {
    return count("SELECT sum(" + column + ") FROM batch_ledger WHERE run_id = " + run_id);
  };

  const std::filesystem::path screenshots = output_folder();
  std::filesystem::remove_all(screenshots);
  std::filesystem::create_directories(screenshots);
  ProcessOptions browser;
  browser.env = {{"TIDEMARK_UI_URL", "http://127.0.0.1:" + std::to_string(port) + "/ui/"},
                 {"TIDEMARK_API_TOKEN", kToken},
                 {"TIDEMARK_SCREENSHOT_DIR", screenshots.string()},
                 {"CHROMIUM", kChromium}};
  browser.working_directory = browser_tests;
  browser.timeout = 3min;
  // The script's `RESULT {…}` line, once it exited 0.
  const auto run_browser = [&](const ProcessOptions& options) -> boost::json::object {
    const ProcessResult run = run_process(node, {(browser_tests / "console.test.mjs").string()}, options);
    std::cout << run.out;
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    const auto marker = run.out.rfind("RESULT ");
    if (run.exit_code != 0 || marker == std::string::npos) return {};
    return boost::json::parse(run.out.substr(marker + 7, run.out.find('\n', marker) - marker - 7)).as_object();
  };
  const auto result = run_browser(browser);
  ASSERT_FALSE(result.empty());
  const auto number = [&](const char* key) { return result.at(key).to_number<int>(); };

  // The page's numbers are the database's.
  EXPECT_EQ(result.at("pipeline").as_string(), "payments");
  EXPECT_EQ(number("pipeline_open_quarantine"), open_quarantine);
  EXPECT_EQ(number("pipeline_dead"), dead);
  EXPECT_EQ(number("quarantine_open"), open_quarantine);
  EXPECT_EQ(number("quarantine_rows"), open_quarantine);
  EXPECT_EQ(number("dead"), dead);
  EXPECT_EQ(result.at("dead_by_destination").as_object().at("ledger").to_number<int>(), dead);
  EXPECT_EQ(std::to_string(number("run_id")), run_id);
  EXPECT_EQ(number("run_input"), ledger("input"));
  EXPECT_EQ(number("run_inserted"), ledger("inserted"));
  EXPECT_EQ(number("run_invalid"), ledger("invalid"));
  EXPECT_EQ(number("run_conflict"), ledger("conflict"));
  EXPECT_NE(std::string(result.at("last_error_shown").as_string()).find("410"), std::string::npos)
      << result.at("last_error_shown");
  EXPECT_EQ(number("cookies"), 0) << "the console sets no cookie";
  EXPECT_TRUE(result.at("token_in_session_storage").as_bool());
  EXPECT_FALSE(result.at("narrow_overflow").as_bool()) << "the page is wider than 390 px";
  EXPECT_FALSE(result.at("narrow_overflow_runs").as_bool()) << "the runs and their chart are wider than 390 px";
  EXPECT_GE(number("chart_canvases"), 1) << "the runs chart (uPlot) drew nothing";
  EXPECT_TRUE(result.at("runs_table_fits").as_bool()) << "the runs table is wider than a 1280 px window";
  EXPECT_TRUE(result.at("chart_ticks_utc").as_bool()) << "the chart's time axis is not in UTC: "
                                                      << result.at("chart_ticks");

  // The released record (the first t1, 10.50) is applied in the table.
  const std::string entry = std::to_string(number("released_entry"));
  EXPECT_EQ(result.at("shown_raw").as_string(), db_.scalar("SELECT raw FROM quarantine WHERE id = " + entry));
  EXPECT_EQ(db_.scalar("SELECT released_at IS NOT NULL FROM quarantine WHERE id = " + entry), "t");
  EXPECT_EQ(db_.scalar("SELECT amount::text FROM transaction_state WHERE transaction_id = 't1'"), "10.50");
  EXPECT_EQ(number("quarantine_open_after"), open_quarantine - 1);
  // Before, both t1 conflicts were offered a Release (nothing stored for t1); after, the
  // other one conflicts with the row the release stored and is offered none.
  EXPECT_EQ(number("conflict_releases_before"), 2);
  EXPECT_EQ(number("conflict_rows_after"), 1);
  EXPECT_EQ(number("conflict_releases_after"), 0);
  EXPECT_NE(std::string(result.at("conflict_note").as_string()).find("would conflict again"), std::string::npos)
      << result.at("conflict_note");

  // The retried dead letter reaches the receiver.
  const std::string event = std::to_string(number("retried_event"));
  EXPECT_EQ(number("dead_after"), dead - 1);
  EXPECT_TRUE(wait_until("SELECT status FROM outbox WHERE id = " + event, "delivered", 30s));
  const std::string key = db_.scalar("SELECT idempotency_key FROM outbox WHERE id = " + event);
  const auto received = receiver_.requests();
  EXPECT_TRUE(std::any_of(received.begin(), received.end(),
                          [&](const ReceivedRequest& request) { return request.key == key && request.applied; }))
      << key << " was not applied by the receiver";

  // Both widths were photographed.
  for (const char* name : {"console-1280-quarantine.png", "console-390-dead-letters.png"}) {
    EXPECT_TRUE(std::filesystem::exists(screenshots / name)) << name;
  }
  serve->kill(SIGTERM);
  serve->wait();

  // A serve that needs no token (loopback, TIDEMARK_API_TOKEN unset): the page loads its data
  // on open, without Connect.
  ProcessOptions open_options = options;
  open_options.env["TIDEMARK_API_TOKEN"] = std::nullopt;
  const unsigned short open_port = free_port();
  auto open_serve = start_tidemark(
      {"serve", "--config", config.string(), "--listen", "127.0.0.1:" + std::to_string(open_port)}, open_options);
  ASSERT_TRUE(wait_for_health(open_port)) << "serve without a token did not come up";
  ProcessOptions open_browser = browser;
  open_browser.env["TIDEMARK_UI_URL"] = "http://127.0.0.1:" + std::to_string(open_port) + "/ui/";
  open_browser.env["TIDEMARK_API_TOKEN"] = "";
  const auto opened = run_browser(open_browser);
  ASSERT_FALSE(opened.empty());
  EXPECT_EQ(opened.at("open_pipeline").as_string(), "payments");
  EXPECT_EQ(opened.at("open_quarantine").to_number<int>(),
            count("SELECT count(*) FROM quarantine WHERE released_at IS NULL"));
  EXPECT_NE(std::string(opened.at("open_status").as_string()).find("Loaded at"), std::string::npos)
      << opened.at("open_status");
  open_serve->kill(SIGTERM);
  open_serve->wait();
  std::cout << "screenshots in " << screenshots.string() << "\n";
}

}  // namespace
}  // namespace tidemark::testing
