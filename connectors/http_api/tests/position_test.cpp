#include "connectors/http_api/position.hpp"

#include <gtest/gtest.h>

namespace tidemark::connectors::http_api {
namespace {

TEST(HttpPosition, TextRoundTripsThePageTheCursorAndTheRecordsConsumed) {
  const PagePosition position{3, "after:17 \xC3\xA9\"\\", 2};
  const std::string text = to_text(position);
  EXPECT_EQ(text, R"({"page":3,"cursor":"after:17 é\"\\","consumed":2})");
  EXPECT_EQ(parse_position(text), position);
}

TEST(HttpPosition, TheEmptyTextIsTheFirstPageWithNothingConsumed) {
  EXPECT_EQ(parse_position(""), PagePosition{});
}

TEST(HttpPosition, AnythingElseIsRefused) {
  for (const char* text : {"x", "{}", R"({"page":1,"cursor":"a"})", R"({"page":-1,"cursor":"a","consumed":0})",
                           R"({"page":1.5,"cursor":"a","consumed":0})", R"({"page":1,"cursor":2,"consumed":0})",
                           R"({"page":1,"cursor":"a","consumed":0,"x":1})", "data/in/a.csv:12", "[1,2,3]"}) {
    EXPECT_EQ(parse_position(text), std::nullopt) << text;
  }
}

TEST(HttpPosition, OrderIsByPageThenByRecordsConsumedWhateverTheCursors) {
  EXPECT_TRUE(precedes({0, "", 5}, {1, "zzz", 0}));
  EXPECT_TRUE(precedes({2, "b", 1}, {2, "b", 2}));
  EXPECT_FALSE(precedes({2, "b", 2}, {2, "b", 2}));
  EXPECT_FALSE(precedes({3, "a", 0}, {2, "z", 9}));
}

TEST(HttpPosition, TheCursorIsPercentEncodedIntoEveryPlaceholder) {
  EXPECT_EQ(expand_url("https://a/v1?c={checkpoint}", "after:17 é/&=~-._"),
            "https://a/v1?c=after%3A17%20%C3%A9%2F%26%3D~-._");
  EXPECT_EQ(expand_url("https://a/v1?since={checkpoint}&again={checkpoint}", "x y"),
            "https://a/v1?since=x%20y&again=x%20y");
  EXPECT_EQ(expand_url("https://a/v1?since={checkpoint}", ""), "https://a/v1?since=");
  EXPECT_EQ(expand_url("https://a/v1", "ignored"), "https://a/v1");
}

}  // namespace
}  // namespace tidemark::connectors::http_api
