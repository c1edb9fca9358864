// `tidemark run` on an HTTP source: real tidemark processes reading a real
// paged API over TLS into a throwaway PostgreSQL. A run loads every page and stores the
// exact position; a second run loads only what the API added; a 4xx fails the run (exit 1)
// naming the redacted URL and the status; a quarantined record keeps its raw text and page
// position, and `quarantine release` decodes it again through the HTTP source's decoder.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/process.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_api_server.hpp"
#include "tests/support/test_certificates.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark {
namespace {

using testing::ApiFailure;
using testing::PageShape;
using testing::ProcessOptions;
using testing::ProcessResult;
using testing::Rows;
using testing::TempDir;
using testing::TestApiServer;
using testing::TestCertificateAuthority;
using testing::TestDatabase;
using testing::TlsIdentity;
using testing::query_rows;
using testing::run_tidemark;

constexpr char kTokenEnv[] = "TIDEMARK_HTTP_SOURCE_TEST_TOKEN";
constexpr char kToken[] = "Bearer e2e-secret-token";

std::string order(int i, const std::string& amount = "\"10.50\"") {
  return R"({"order_id": "o)" + std::to_string(i) + R"(", "version": 1, "amount": )" + amount + "}";
}

class HttpSourceRun : public ::testing::Test {
 protected:
  TestCertificateAuthority ca_;
  TlsIdentity identity_ = [this] {
    const auto certificate = ca_.issue({"localhost"}, {"127.0.0.1"});
    return TlsIdentity{certificate.cert_file, certificate.key_file};
  }();
  TestApiServer server_{PageShape::kCursorObject, 3, identity_};
  TestDatabase db_;
  TempDir dir_;

  // The orders entity read from the server; `extra` is its extra_fields.
  std::string config(const std::string& extra = "reject", const std::string& url_suffix = "") const {
    return "entities:\n"
           "  orders:\n"
           "    key: order_id\n"
           "    revision: version\n"
           "    extra_fields: " + extra + "\n"
           "    fields:\n"
           "      amount: {type: decimal, precision: 14, scale: 2, required: true}\n"
           "pipelines:\n"
           "  orders_api:\n"
           "    entity: orders\n"
           "    source:\n"
           "      kind: http\n"
           "      url: \"" + server_.base_url() + url_suffix + "?cursor={checkpoint}\"\n"
           "      records: data\n"
           "      next: {json: meta.next_cursor}\n"
           "      auth: {header: Authorization, value_env: " + kTokenEnv + "}\n"
           "      ca_file: " + ca_.ca_file().string() + "\n"
           "    batch_size: 2\n";
  }

  ProcessResult tidemark(const std::string& yaml, std::vector<std::string> args) const {
    const auto file = dir_.write("config.yaml", yaml);
    args.insert(args.end(), {"--config", file.string(), "--database", db_.url()});
    ProcessOptions options;
    options.env[kTokenEnv] = kToken;
    return run_tidemark(args, options);
  }
  ProcessResult run(const std::string& yaml) const {
    return tidemark(yaml, {"run", "--pipeline", "orders_api", "--json"});
  }
  Rows rows(const std::string& sql) const { return query_rows(db_, sql); }
};

TEST_F(HttpSourceRun, ARunLoadsEveryPageAndASecondLoadsOnlyWhatTheApiAdded) {
  server_.require_authorization(kToken);
  server_.set_records({order(1), order(2), order(3), order(4), order(5)});
  const auto first = run(config());
  ASSERT_EQ(first.exit_code, 0) << first.both();
  EXPECT_NE(first.out.find("\"input\":5"), std::string::npos) << first.out;
  EXPECT_EQ(rows("SELECT count(*) FROM orders"), (Rows{{"5"}}));
  EXPECT_EQ(rows("SELECT position FROM checkpoint WHERE pipeline = 'orders_api'"),
            (Rows{{R"({"page":1,"cursor":"after:3","consumed":2})"}}));
  EXPECT_EQ(first.both().find("e2e-secret-token"), std::string::npos);

  server_.set_records({order(1), order(2), order(3), order(4), order(5), order(6), order(7), order(8, "\"1.25\"")});
  const auto second = run(config());
  ASSERT_EQ(second.exit_code, 0) << second.both();
  EXPECT_NE(second.out.find("\"input\":3"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("\"inserted\":3"), std::string::npos) << second.out;
  EXPECT_EQ(rows("SELECT order_id, amount::text FROM orders WHERE order_id = 'o8'"), (Rows{{"o8", "1.25"}}));
  EXPECT_EQ(rows("SELECT position FROM checkpoint WHERE pipeline = 'orders_api'"),
            (Rows{{R"({"page":2,"cursor":"after:6","consumed":2})"}}));
  // Page 1 again (for the records added to it), then page 2: no page 0.
  const auto requests = server_.requests();
  ASSERT_GE(requests.size(), 2u);
  EXPECT_EQ(requests[requests.size() - 2].cursor, "after:3");
  EXPECT_EQ(requests.back().cursor, "after:6");
}

TEST_F(HttpSourceRun, A4xxFailsTheRunNamingTheRedactedUrlAndTheStatus) {
  server_.set_records({order(1)});
  server_.fail_next(ApiFailure::kNotFound);
  const std::string url = server_.base_url();
  const std::string port = url.substr(url.rfind(':') + 1, url.find('/', url.rfind(':')) - url.rfind(':') - 1);
  std::string yaml = config();
  const std::string plain = "url: \"https://127.0.0.1:" + port;
  yaml.replace(yaml.find(plain), plain.size(), "url: \"https://user:pw-in-url@127.0.0.1:" + port);
  const auto result = run(yaml);
  EXPECT_EQ(result.exit_code, 1) << result.both();
  EXPECT_NE(result.err.find("HTTP 404"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("https://***@127.0.0.1:" + port + "/v1/orders?***"), std::string::npos) << result.err;
  EXPECT_EQ(result.both().find("pw-in-url"), std::string::npos) << result.both();
  EXPECT_EQ(result.both().find("e2e-secret-token"), std::string::npos) << result.both();
  EXPECT_EQ(rows("SELECT count(*) FROM checkpoint"), (Rows{{"0"}}));
}

TEST_F(HttpSourceRun, AQuarantinedRecordKeepsItsRawTextAndPageAndReleasesThroughTheHttpDecoder) {
  // A record over two lines, with a member the entity does not declare.
  const std::string odd = "{\"order_id\": \"o2\", \"version\": 1,\n   \"amount\": 7.5, \"channel\": \"web\"}";
  server_.set_records({order(1), odd});
  const auto result = run(config("reject"));
  ASSERT_EQ(result.exit_code, 0) << result.both();
  EXPECT_EQ(rows("SELECT transaction_id, field, format, raw, position FROM quarantine"),
            (Rows{{"o2", "channel", "json", odd,
                   "page 0 of " + server_.base_url() + "?***:3 (byte " +
                       std::to_string(std::string("{\"data\": [\n  ").size() + order(1).size() + 4) + ")"}}));
  const std::string id = rows("SELECT id FROM quarantine")[0][0];
  const auto release = tidemark(config("keep"), {"quarantine", "release", id});
  ASSERT_EQ(release.exit_code, 0) << release.both();
  EXPECT_NE(release.out.find("inserted"), std::string::npos) << release.out;
  EXPECT_EQ(rows("SELECT order_id, amount::text, extra::text FROM orders ORDER BY 1"),
            (Rows{{"o1", "10.50", "<null>"}, {"o2", "7.50", R"({"channel": "web"})"}}));
}

TEST_F(HttpSourceRun, ABadHttpSourceIsAConfigErrorNamingTheKeyAndLine) {
  std::string yaml = config();
  yaml.replace(yaml.find("records: data"), std::string("records: data").size(), "records: data..items");
  const auto result = run(yaml);
  EXPECT_EQ(result.exit_code, 2) << result.both();
  EXPECT_NE(result.err.find("config.yaml:14: pipelines.orders_api.source.records: expected a dotted path"),
            std::string::npos)
      << result.err;
}

}  // namespace
}  // namespace tidemark
