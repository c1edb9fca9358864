// The console's page over serve's HTTP API, in-process against a real
// PostgreSQL over real HTTP on 127.0.0.1: GET /ui/ answers the embedded page without the
// token and with the strict Content-Security-Policy, an asset comes with its content type,
// an unknown asset is 404, /ui redirects to /ui/, and nothing sets a cookie, while the JSON
// routes beside it still want the token.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "app/serve/service.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::app::serve {
namespace {

using testing::HttpAnswer;
using testing::http_request;
using testing::TempDir;
using testing::TestDatabase;

constexpr char kPolicy[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

class ServeConsolePageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto source = dir_.write("in.csv", "transaction_id,source_revision,amount\n");
    ServeOptions options;
    options.config = app::config::parse_config("pipelines:\n  p:\n    source: {path: " + source.string() + "}\n",
                                            "console-page-test.yaml");
    options.database_url = db_.url();
    options.listen = "127.0.0.1:0";
    options.api.api_token = "page-token";
    options.run_relay = false;
    service_ = std::make_unique<Service>(std::move(options));
    port_ = service_->port();
    thread_ = std::thread([this] { service_->run(); });
  }

  void TearDown() override {
    service_->request_stop();
    thread_.join();
  }

  // Every answer under /ui/ carries the console's headers and no cookie.
  static void expect_console_headers(const HttpAnswer& answer, const std::string& target) {
    EXPECT_EQ(answer.headers.count("content-security-policy") ? answer.headers.at("content-security-policy") : "",
              kPolicy)
        << target;
    EXPECT_EQ(answer.headers.count("x-content-type-options") ? answer.headers.at("x-content-type-options") : "",
              "nosniff")
        << target;
    EXPECT_EQ(answer.headers.count("set-cookie"), 0u) << target;
  }

  TestDatabase db_;
  TempDir dir_;
  std::unique_ptr<Service> service_;
  std::thread thread_;
  unsigned short port_ = 0;
};

TEST_F(ServeConsolePageTest, ThePageIsServedWithoutTheTokenUnderAStrictContentSecurityPolicy) {
  const HttpAnswer page = http_request(port_, "GET", "/ui/");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.headers.at("content-type"), "text/html; charset=utf-8");
  expect_console_headers(page, "/ui/");
  EXPECT_NE(page.body.find("<label for=\"token\">API token</label>"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find("src=\"app.js\""), std::string::npos);
  EXPECT_EQ(http_request(port_, "GET", "/ui/index.html").body, page.body);

  EXPECT_EQ(http_request(port_, "GET", "/v1/pipelines").status, 401) << "the data still needs the token";
}

TEST_F(ServeConsolePageTest, AssetsComeWithTheirContentTypeAndAnUnknownOneIs404) {
  const HttpAnswer script = http_request(port_, "GET", "/ui/app.js");
  ASSERT_EQ(script.status, 200);
  EXPECT_EQ(script.headers.at("content-type"), "text/javascript; charset=utf-8");
  EXPECT_NE(script.body.find("use strict"), std::string::npos);
  expect_console_headers(script, "/ui/app.js");
  const HttpAnswer style = http_request(port_, "GET", "/ui/app.css");
  ASSERT_EQ(style.status, 200);
  EXPECT_EQ(style.headers.at("content-type"), "text/css; charset=utf-8");

  const HttpAnswer vendored = http_request(port_, "GET", "/ui/vendor/uplot/uPlot.iife.min.js");
  ASSERT_EQ(vendored.status, 200) << "a vendored library, from a folder of the page";
  EXPECT_EQ(vendored.headers.at("content-type"), "text/javascript; charset=utf-8");
  const HttpAnswer license = http_request(port_, "GET", "/ui/vendor/uplot/LICENSE");
  ASSERT_EQ(license.status, 200);
  EXPECT_EQ(license.headers.at("content-type"), "text/plain; charset=utf-8");
  EXPECT_NE(license.body.find("MIT"), std::string::npos);

  for (const std::string target : {"/ui/nothing.js", "/ui/vendor/none.js", "/ui/../v1/pipelines", "/ui/%2e%2e/app.js"}) {
    const HttpAnswer missing = http_request(port_, "GET", target);
    EXPECT_EQ(missing.status, 404) << target << ": " << missing.body;
    expect_console_headers(missing, target);
  }
  EXPECT_EQ(http_request(port_, "POST", "/ui/").status, 405);
}

TEST_F(ServeConsolePageTest, UiWithoutTheSlashRedirectsToThePage) {
  const HttpAnswer answer = http_request(port_, "GET", "/ui");
  EXPECT_EQ(answer.status, 308);
  EXPECT_EQ(answer.headers.at("location"), "/ui/");
  expect_console_headers(answer, "/ui");
}

}  // namespace
}  // namespace tidemark::app::serve
