// The HTTP source against a real paged API on 127.0.0.1, over TLS with the
// tests' own certificate authority: every page of each shape, an exact resume from any
// position, records added between runs, 429/5xx/slow/cut answers retried, a 4xx that fails
// with the URL redacted, the auth header sent and never shown.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "connectors/http_api/http_source.hpp"
#include "pipeline/core/entity.hpp"
#include "pipeline/core/validate.hpp"
#include "tests/support/test_api_server.hpp"
#include "tests/support/test_certificates.hpp"

namespace tidemark {
namespace {

using connectors::http_api::HttpSourceOptions;
using connectors::http_api::PageFormat;
using connectors::http_api::Paging;
using testing::ApiFailure;
using testing::PageShape;
using testing::TestApiServer;
using testing::TestCertificateAuthority;
using testing::TlsIdentity;
using namespace std::chrono_literals;

std::vector<std::string> records(std::size_t count, std::size_t first = 1) {
  std::vector<std::string> out;
  for (std::size_t i = first; i < first + count; ++i) {
    out.push_back(R"({"transaction_id": "T)" + std::to_string(i) +
                  R"(", "source_revision": 1, "amount": 1234567890.12})");
  }
  return out;
}

// The options that read `server` in its shape.
HttpSourceOptions options_for(const TestApiServer& server, PageShape shape, const std::string& ca_file) {
  HttpSourceOptions options;
  options.url = server.base_url() + "?cursor={checkpoint}";
  options.ca_file = ca_file;
  options.base_delay = 10ms;
  options.max_delay = 50ms;
  switch (shape) {
    case PageShape::kCursorObject:
      options.records = {"data"};
      options.paging = Paging::kJsonField;
      options.next_json = {"meta", "next_cursor"};
      break;
    case PageShape::kLinkArray:
      options.paging = Paging::kLinkHeader;
      options.next_relation = "next";
      break;
    case PageShape::kNdjson:
      options.format = PageFormat::kNdjson;
      options.paging = Paging::kLinkHeader;
      options.next_relation = "next";
      break;
  }
  return options;
}

std::unique_ptr<pipeline::Source> open(const HttpSourceOptions& options) {
  return connectors::http_api::open_http_source(
      options, std::make_shared<const pipeline::RecordLayout>(
                   pipeline::record_layout(pipeline::built_in_transaction_entity())));
}

// The keys read in batches of `batch` until the end (or `limit` records).
std::vector<std::string> read_keys(pipeline::Source& source, std::size_t batch, std::size_t limit = SIZE_MAX) {
  std::vector<std::string> keys;
  while (keys.size() < limit) {
    std::vector<pipeline::DecodedRecord> out;
    if (source.read(out, std::min(batch, limit - keys.size())) == 0) break;
    for (const auto& record : out) {
      EXPECT_FALSE(record.decode_error) << *record.decode_error;
      if (!record.decode_error) keys.push_back(record.field(pipeline::kKeyField)->text);
    }
  }
  return keys;
}

std::vector<std::string> keys(std::size_t count, std::size_t first = 1) {
  std::vector<std::string> out;
  for (std::size_t i = first; i < first + count; ++i) out.push_back("T" + std::to_string(i));
  return out;
}

class HttpSourceTest : public ::testing::Test {
 protected:
  TestCertificateAuthority ca_;
  TlsIdentity identity_ = [this] {
    const auto certificate = ca_.issue({"localhost"}, {"127.0.0.1"});
    return TlsIdentity{certificate.cert_file, certificate.key_file};
  }();
};

TEST_F(HttpSourceTest, ReadsEveryPageOfEachShapeOverVerifiedTlsWithExactNumbers) {
  for (const PageShape shape : {PageShape::kCursorObject, PageShape::kLinkArray, PageShape::kNdjson}) {
    SCOPED_TRACE(static_cast<int>(shape));
    TestApiServer server(shape, 3, identity_);
    server.set_records(records(10));
    auto source = open(options_for(server, shape, ca_.ca_file().string()));
    std::vector<pipeline::DecodedRecord> first;
    ASSERT_EQ(source->read(first, 1), 1u);
    EXPECT_EQ(first[0].field(2)->text, "1234567890.12");  // amount: the number's source text
    EXPECT_EQ(first[0].raw, records(1)[0]);
    EXPECT_EQ(source->format(), "json");
    EXPECT_EQ(read_keys(*source, 4), keys(9, 2));
    // Four pages, each fetched once, the first with an empty cursor.
    const auto requests = server.requests();
    ASSERT_EQ(requests.size(), 4u);
    EXPECT_EQ(requests[0].cursor, "");
    EXPECT_EQ(requests[1].cursor, "after:3");
    EXPECT_EQ(requests[3].cursor, "after:9");
    EXPECT_EQ(server.connections(), 1u);  // kept alive
  }
}

// A cycle of pages ends the read at the first page this read has been to, instead of reading
// the same records for ever. The first page's cursor is "" and its link back is "again", so
// that page is read once more (its records are then unchanged replays) before the cycle shows.
TEST_F(HttpSourceTest, APagingCycleEndsTheReadAtThePageItWasAtBefore) {
  for (const PageShape shape : {PageShape::kCursorObject, PageShape::kLinkArray}) {
    SCOPED_TRACE(static_cast<int>(shape));
    TestApiServer server(shape, 2, identity_);
    server.set_records(records(5));
    server.link_back_to_the_start();
    auto source = open(options_for(server, shape, ca_.ca_file().string()));
    std::vector<std::string> expected = keys(5);
    expected.insert(expected.end(), {"T1", "T2"});
    EXPECT_EQ(read_keys(*source, 3, 50), expected);
    EXPECT_EQ(server.requests().size(), 4u);
  }
}

TEST_F(HttpSourceTest, ThePositionResumesAtTheExactRecordInTheMiddleOfAPage) {
  TestApiServer server(PageShape::kCursorObject, 4, identity_);
  server.set_records(records(10));
  const auto options = options_for(server, PageShape::kCursorObject, ca_.ca_file().string());
  for (std::size_t stop = 0; stop <= 10; ++stop) {
    SCOPED_TRACE("stopped after " + std::to_string(stop));
    auto first = open(options);
    auto before = read_keys(*first, 3, stop);
    const pipeline::Position position = first->position();
    auto second = open(options);
    second->seek(position);
    const auto after = read_keys(*second, 3);
    before.insert(before.end(), after.begin(), after.end());
    EXPECT_EQ(before, keys(10)) << "position " << position.text;
  }
  auto source = open(options);
  read_keys(*source, 5, 6);
  // The cursor names page 1 (records 5-8), of which 2 are consumed.
  EXPECT_EQ(source->position().text, R"({"page":1,"cursor":"after:4","consumed":2})");
  EXPECT_TRUE(source->precedes({R"({"page":0,"cursor":"","consumed":3})"}, source->position()));
  EXPECT_FALSE(source->precedes(source->position(), {R"({"page":1,"cursor":"after:4","consumed":1})"}));
  EXPECT_THROW(source->seek({"in/a.csv:1"}), pipeline::SourceError);
}

TEST_F(HttpSourceTest, ASecondRunReadsOnlyTheRecordsAddedSinceTheFirstOnAnyShape) {
  for (const PageShape shape : {PageShape::kCursorObject, PageShape::kLinkArray, PageShape::kNdjson}) {
    SCOPED_TRACE(static_cast<int>(shape));
    TestApiServer server(shape, 4, identity_);
    server.set_records(records(6));
    const auto options = options_for(server, shape, ca_.ca_file().string());
    auto first = open(options);
    EXPECT_EQ(read_keys(*first, 100), keys(6));
    const auto position = first->position();
    server.set_records(records(11));  // the last page grows, and two more pages follow it
    auto second = open(options);
    second->seek(position);
    EXPECT_EQ(read_keys(*second, 100), keys(5, 7));
    auto third = open(options);
    third->seek(second->position());
    EXPECT_EQ(read_keys(*third, 100), std::vector<std::string>{});
  }
}

TEST_F(HttpSourceTest, Answers429HonouringRetryAfterAnd5xxAreRetried) {
  TestApiServer server(PageShape::kCursorObject, 5, identity_);
  server.set_records(records(10));
  server.set_retry_after("1");
  server.fail_next(ApiFailure::kNone);  // page 0
  server.fail_next(ApiFailure::kTooManyRequests);
  server.fail_next(ApiFailure::kServerError, 2);
  auto source = open(options_for(server, PageShape::kCursorObject, ca_.ca_file().string()));
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(read_keys(*source, 100), keys(10));
  EXPECT_GE(std::chrono::steady_clock::now() - started, 1s);  // the Retry-After
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 5u);
  for (std::size_t i = 1; i < 5; ++i) EXPECT_EQ(requests[i].cursor, "after:5");
}

TEST_F(HttpSourceTest, SlowAndCutAnswersAreRetriedWithinTheTimeout) {
  TestApiServer server(PageShape::kLinkArray, 5, identity_);
  server.set_records(records(10));
  server.set_slow_delay(2s);
  server.fail_next(ApiFailure::kSlow);
  server.fail_next(ApiFailure::kCut);
  auto options = options_for(server, PageShape::kLinkArray, ca_.ca_file().string());
  options.request_timeout = 300ms;
  auto source = open(options);
  EXPECT_EQ(read_keys(*source, 100), keys(10));
  EXPECT_EQ(server.requests().size(), 4u);
}

TEST_F(HttpSourceTest, RetriesEndAfterMaxAttemptsNamingTheLastError) {
  TestApiServer server(PageShape::kCursorObject, 5, identity_);
  server.set_records(records(3));
  server.fail_next(ApiFailure::kServerError, 10);
  auto options = options_for(server, PageShape::kCursorObject, ca_.ca_file().string());
  options.max_attempts = 3;
  auto source = open(options);
  try {
    read_keys(*source, 100);
    FAIL() << "no error";
  } catch (const pipeline::SourceError& error) {
    EXPECT_NE(std::string(error.what()).find("failed 3 times; the last: HTTP 500: injected failure"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST_F(HttpSourceTest, A4xxFailsAtOnceNamingTheRedactedUrlAndTheStatus) {
  TestApiServer server(PageShape::kCursorObject, 5, identity_);
  server.set_records(records(3));
  server.fail_next(ApiFailure::kNotFound);
  auto options = options_for(server, PageShape::kCursorObject, ca_.ca_file().string());
  options.url = "https://user:hunter2@127.0.0.1:" + server.base_url().substr(server.base_url().rfind(':') + 1) +
                "?api_key=s3cret&cursor={checkpoint}";
  auto source = open(options);
  try {
    read_keys(*source, 100);
    FAIL() << "no error";
  } catch (const pipeline::SourceError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("HTTP 404"), std::string::npos) << message;
    EXPECT_NE(message.find("https://***@127.0.0.1:"), std::string::npos) << message;
    EXPECT_EQ(message.find("hunter2"), std::string::npos) << message;
    EXPECT_EQ(message.find("s3cret"), std::string::npos) << message;
  }
  EXPECT_EQ(server.requests().size(), 1u);  // not retried
}

TEST_F(HttpSourceTest, TheAuthHeaderComesFromItsVariableAndIsNeverInAnError) {
  TestApiServer server(PageShape::kCursorObject, 5, identity_);
  server.set_records(records(7));
  server.require_authorization("Bearer tok-123");
  auto options = options_for(server, PageShape::kCursorObject, ca_.ca_file().string());
  options.auth_header = "Authorization";
  options.auth_value_env = "TIDEMARK_TEST_API_TOKEN";
  ::setenv("TIDEMARK_TEST_API_TOKEN", "Bearer tok-123", 1);
  EXPECT_EQ(read_keys(*open(options), 100), keys(7));
  for (const auto& request : server.requests()) EXPECT_EQ(request.authorization, "Bearer tok-123");

  ::setenv("TIDEMARK_TEST_API_TOKEN", "Bearer wrong-456", 1);
  try {
    read_keys(*open(options), 100);
    FAIL() << "no error";
  } catch (const pipeline::SourceError& error) {
    EXPECT_NE(std::string(error.what()).find("HTTP 401"), std::string::npos) << error.what();
    EXPECT_EQ(std::string(error.what()).find("wrong-456"), std::string::npos) << error.what();
  }
  ::unsetenv("TIDEMARK_TEST_API_TOKEN");
  EXPECT_THROW(open(options), pipeline::SourceError);  // the variable is not set
}

TEST_F(HttpSourceTest, ACertificateTheTrustStoreDoesNotKnowIsRefused) {
  TestApiServer server(PageShape::kCursorObject, 5, identity_);
  server.set_records(records(1));
  auto options = options_for(server, PageShape::kCursorObject, "");  // the system store
  options.max_attempts = 1;
  try {
    read_keys(*open(options), 100);
    FAIL() << "no error";
  } catch (const pipeline::SourceError& error) {
    EXPECT_NE(std::string(error.what()).find("certificate verify failed"), std::string::npos) << error.what();
  }
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(HttpSourceTest, MaxRpsSpacesTheRequests) {
  TestApiServer server(PageShape::kCursorObject, 2, identity_);
  server.set_records(records(8));  // 4 pages
  auto options = options_for(server, PageShape::kCursorObject, ca_.ca_file().string());
  options.max_rps = 10;
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(read_keys(*open(options), 100), keys(8));
  EXPECT_GE(std::chrono::steady_clock::now() - started, 300ms);  // 3 gaps of 100 ms
}

}  // namespace
}  // namespace tidemark
