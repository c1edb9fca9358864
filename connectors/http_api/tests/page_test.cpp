#include "connectors/http_api/page.hpp"

#include <gtest/gtest.h>

namespace tidemark::connectors::http_api {
namespace {

Page page_of(std::string_view body, const JsonPath& records, const std::optional<JsonPath>& next) {
  auto parsed = parse_json_page(body, records, next);
  if (auto* error = std::get_if<std::string>(&parsed)) ADD_FAILURE() << *error;
  return std::get<Page>(parsed);
}

std::string error_of(std::string_view body, const JsonPath& records, const std::optional<JsonPath>& next) {
  auto parsed = parse_json_page(body, records, next);
  return std::holds_alternative<std::string>(parsed) ? std::get<std::string>(parsed) : "";
}

TEST(JsonPath, DottedPathsSplitIntoMemberNames) {
  EXPECT_EQ(parse_json_path("data"), (JsonPath{"data"}));
  EXPECT_EQ(parse_json_path("meta.next_cursor"), (JsonPath{"meta", "next_cursor"}));
  EXPECT_EQ(parse_json_path(""), std::nullopt);
  EXPECT_EQ(parse_json_path("a..b"), std::nullopt);
  EXPECT_EQ(parse_json_path(".a"), std::nullopt);
  EXPECT_EQ(parse_json_path("a."), std::nullopt);
  EXPECT_EQ(to_string(JsonPath{"meta", "next"}), "meta.next");
}

TEST(JsonPage, RecordsAreTheExactBytesOfEachElementAtTheDottedPath) {
  const std::string body =
      "{\"result\": {\"items\": [{\"id\": \"a\", \"amount\": 1234567890.12},\n {\"id\": \"b\", \"n\": [1, {\"x\": \"]\"}]}]}, "
      "\"paging\": {\"next\": \"c\\u00e9\"}}";
  const Page page = page_of(body, {"result", "items"}, JsonPath{"paging", "next"});
  ASSERT_EQ(page.records.size(), 2u);
  EXPECT_EQ(page.records[0].raw, R"({"id": "a", "amount": 1234567890.12})");
  EXPECT_EQ(page.records[1].raw, R"({"id": "b", "n": [1, {"x": "]"}]})");
  EXPECT_EQ(page.records[0].line, 1u);
  EXPECT_EQ(page.records[1].line, 2u);
  EXPECT_EQ(body.substr(page.records[1].offset, 4), "{\"id");
  EXPECT_EQ(page.next_cursor, "c\xC3\xA9");  // the string's value, escapes undone
}

TEST(JsonPage, APageThatIsAnArrayHoldsTheRecordsItself) {
  const Page page = page_of(" [ {\"id\":1} , 2 ] ", {}, std::nullopt);
  ASSERT_EQ(page.records.size(), 2u);
  EXPECT_EQ(page.records[0].raw, "{\"id\":1}");
  EXPECT_EQ(page.records[1].raw, "2");  // not an object: the record decoder makes it invalid
  EXPECT_EQ(page.next_cursor, std::nullopt);
}

TEST(JsonPage, ANumericCursorKeepsItsSourceText) {
  const Page page = page_of(R"({"data": [], "next": 12345678901234567890123})", {"data"}, JsonPath{"next"});
  EXPECT_EQ(page.next_cursor, "12345678901234567890123");
}

TEST(JsonPage, ANullEmptyOrMissingCursorIsTheLastPage) {
  EXPECT_EQ(page_of(R"({"data": [], "next": null})", {"data"}, JsonPath{"next"}).next_cursor, std::nullopt);
  EXPECT_EQ(page_of(R"({"data": [], "next": ""})", {"data"}, JsonPath{"next"}).next_cursor, std::nullopt);
  EXPECT_EQ(page_of(R"({"data": []})", {"data"}, JsonPath{"meta", "next"}).next_cursor, std::nullopt);
}

TEST(JsonPage, KeysWithEscapesMatchTheirValue) {
  const Page page = page_of(R"({"d\u0061ta": [{"a":1}]})", {"data"}, std::nullopt);
  EXPECT_EQ(page.records.size(), 1u);
}

TEST(JsonPage, ErrorsNameWhatIsWrong) {
  EXPECT_NE(error_of(R"({"data": [1,}")", {"data"}, std::nullopt).find("not JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"data": {"a": 1}})", {"data"}, std::nullopt).find("records 'data' is an object, not an array"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"items": []})", {"data"}, std::nullopt).find("no member 'data'"), std::string::npos);
  EXPECT_NE(error_of(R"({"data": 5})", {"data", "items"}, std::nullopt).find("'data' is a number, not an object"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"data": [], "next": true})", {"data"}, JsonPath{"next"}).find("not a string or a number"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"a": 1})", {}, std::nullopt).find("the page is an object, not an array"), std::string::npos);
}

TEST(JsonPage, NestingPastTheBoundIsMalformedNotARecursion) {
  const std::string deep = "[" + std::string(kMaxPageDepth + 1, '[') + std::string(kMaxPageDepth + 1, ']') + "]";
  EXPECT_NE(error_of(deep, {}, std::nullopt).find("nested deeper"), std::string::npos);
}

TEST(NdjsonPage, EachNonBlankLineIsARecord) {
  auto parsed = parse_ndjson_page("{\"a\":1}\r\n\n  \n{\"a\":2}\nnot json");
  const Page& page = std::get<Page>(parsed);
  ASSERT_EQ(page.records.size(), 3u);
  EXPECT_EQ(page.records[0].raw, "{\"a\":1}");
  EXPECT_EQ(page.records[1].raw, "{\"a\":2}");
  EXPECT_EQ(page.records[1].line, 4u);
  EXPECT_EQ(page.records[2].raw, "not json");  // an invalid record, quarantined with its text
}

}  // namespace
}  // namespace tidemark::connectors::http_api
