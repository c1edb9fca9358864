// `source: {kind: http, …}` (docs/configuration.md "HTTP source"): every key into
// HttpSourceOptions, and each mistake a ConfigError naming the key and its line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "app/config/config.hpp"
#include "app/config/tests/config_errors.hpp"

namespace tidemark::app::config {
namespace {

using connectors::http_api::JsonPath;
using connectors::http_api::PageFormat;
using connectors::http_api::Paging;
using ::testing::HasSubstr;

TEST(ParseHttpSource, EveryKeyIsRead) {
  const auto config = parse_config(
      pipeline_with("{kind: http, url: \"https://api.example/v1/orders?since={checkpoint}\", records: result.items, "
                    "next: {json: meta.next_cursor}, auth: {header: Authorization, value_env: API_TOKEN}, "
                    "max_rps: 2.5, timeout: 10s, max_attempts: 4}"),
      "config.yaml");
  const auto& source = config.pipelines.at("orders").source;
  EXPECT_EQ(source.kind(), "http");
  EXPECT_EQ(source.kind(), "http");
  const auto& http = http_of(source);
  EXPECT_EQ(http.url, "https://api.example/v1/orders?since={checkpoint}");
  EXPECT_EQ(http.format, PageFormat::kJson);
  EXPECT_EQ(http.records, (JsonPath{"result", "items"}));
  EXPECT_EQ(http.paging, Paging::kJsonField);
  EXPECT_EQ(http.next_json, (JsonPath{"meta", "next_cursor"}));
  EXPECT_EQ(http.auth_header, "Authorization");
  EXPECT_EQ(http.auth_value_env, "API_TOKEN");
  EXPECT_EQ(http.max_rps, 2.5);
  EXPECT_EQ(http.request_timeout, std::chrono::seconds(10));
  EXPECT_EQ(http.max_attempts, 4);
}

TEST(ParseHttpSource, DefaultsAreOnePageNoAuthAndNoRateLimit) {
  // The configs are kept: a reference into a temporary one would dangle.
  const auto config = parse_config(pipeline_with("{kind: http, url: \"http://127.0.0.1:9/orders\"}"), "config.yaml");
  const auto& http = http_of(config.pipelines.at("orders").source);
  EXPECT_EQ(http.paging, Paging::kNone);
  EXPECT_TRUE(http.records.empty());
  EXPECT_TRUE(http.auth_header.empty());
  EXPECT_FALSE(http.max_rps.has_value());
  const auto ndjson_config = parse_config(
      pipeline_with("{kind: http, url: \"https://a/b\", format: ndjson, next: {link_header: next}}"), "config.yaml");
  const auto& ndjson = http_of(ndjson_config.pipelines.at("orders").source);
  EXPECT_EQ(ndjson.format, PageFormat::kNdjson);
  EXPECT_EQ(ndjson.paging, Paging::kLinkHeader);
  EXPECT_EQ(ndjson.next_relation, "next");
}

TEST(ParseHttpSourceErrors, EachNamesTheKeyAndTheLine) {
  EXPECT_THAT(config_error(pipeline_with("{kind: http}")),
              HasSubstr("config.yaml:3: pipelines.orders.source: missing required key 'url'"));
  EXPECT_THAT(config_error(pipeline_with("{kind: http, url: ftp://a/b}")),
              HasSubstr("config.yaml:3: pipelines.orders.source.url: expected a URL starting with http:// or https://"));
  EXPECT_THAT(config_error(pipeline_with("{kind: http, url: \"https://a/b\", path: x}")),
              HasSubstr("config.yaml:3: unknown key 'path' in pipelines.orders.source"));
  EXPECT_THAT(config_error(pipeline_with("{kind: http, url: \"https://a/b\", records: a..b}")),
              HasSubstr("pipelines.orders.source.records: expected a dotted path of member names"));
  EXPECT_THAT(config_error(pipeline_with("{kind: http, url: \"https://a/b\", next: {json: a, link_header: next}}")),
              HasSubstr("pipelines.orders.source.next: expected exactly one of json"));
  EXPECT_THAT(config_error(pipeline_with("{kind: http, url: \"https://a/b\", format: ndjson, next: {json: n}}")),
              HasSubstr("pipelines.orders.source.next.json: an ndjson page has no member"));
  EXPECT_THAT(config_error(pipeline_with("{kind: http, url: \"https://a/b\", format: xml}")),
              HasSubstr("pipelines.orders.source.format: expected json or ndjson"));
  EXPECT_THAT(config_error(pipeline_with("{kind: http, url: \"https://a/b\", max_rps: 0}")),
              HasSubstr("pipelines.orders.source.max_rps: expected a positive number of requests per second"));
  EXPECT_THAT(config_error(pipeline_with("{kind: http, url: \"https://a/b\", auth: {header: Authorization}}")),
              HasSubstr("pipelines.orders.source.auth: missing required key 'value_env'"));
  EXPECT_THAT(config_error(pipeline_with("{kind: http, url: \"https://a/b\", auth: {header: Authorization, "
                                         "value: secret}}")),
              HasSubstr("unknown key 'value' in pipelines.orders.source.auth"));
  EXPECT_THAT(config_error(pipeline_with("{kind: http, url: \"http://a/b\", ca_file: ca.pem}")),
              HasSubstr("pipelines.orders.source.ca_file: applies to https:// URLs only"));
  EXPECT_THAT(config_error(pipeline_with("{kind: http, url: \"https://a/b\", ca_file: /nonexistent/ca.pem}")),
              HasSubstr("pipelines.orders.source.ca_file: cannot read '/nonexistent/ca.pem'"));
  EXPECT_THAT(config_error(pipeline_with("{kind: ftp, path: a.csv}")),
              HasSubstr("pipelines.orders.source.kind: expected file, postgres, http or nats"));
}

}  // namespace
}  // namespace tidemark::app::config
