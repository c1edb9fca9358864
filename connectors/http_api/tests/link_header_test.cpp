#include "connectors/http_api/link_header.hpp"

#include <gtest/gtest.h>

namespace tidemark::connectors::http_api {
namespace {

TEST(LinkHeader, FindsTheTargetOfTheNamedRelation) {
  EXPECT_EQ(link_target(R"(<https://api.example/v1/orders?page=2>; rel="next", <https://api.example/v1/orders?page=9>; rel="last")",
                        "next"),
            "https://api.example/v1/orders?page=2");
  EXPECT_EQ(link_target(R"(<https://a/1>; rel="first", <https://a/3>; rel=next)", "next"), "https://a/3");
}

TEST(LinkHeader, RelationTypesCompareIgnoringCaseAndMayBeListed) {
  EXPECT_EQ(link_target(R"(<https://a/2>; rel="prefetch NEXT")", "next"), "https://a/2");
  EXPECT_EQ(link_target(R"(<https://a/2>; REL="Next")", "next"), "https://a/2");
}

TEST(LinkHeader, OnlyTheFirstRelParameterCounts) {
  EXPECT_EQ(link_target(R"(<https://a/2>; rel="prev"; rel="next")", "next"), std::nullopt);
}

TEST(LinkHeader, OtherParametersAndQuotedCommasAreSkipped) {
  EXPECT_EQ(link_target(R"(<https://a/1>; title="one, two; three"; rel="prev", <https://a/2>; type="x"; rel="next")",
                        "next"),
            "https://a/2");
  // A comma inside the target is part of it.
  EXPECT_EQ(link_target(R"(<https://a/p?ids=1,2>; rel="next")", "next"), "https://a/p?ids=1,2");
  // A relative reference is returned as written; the source resolves it against the page URL.
  EXPECT_EQ(link_target(R"(</v1/orders?cursor=x>; rel="next")", "next"), "/v1/orders?cursor=x");
}

TEST(LinkHeader, NoMatchingRelationOrAMalformedHeaderIsNoNextPage) {
  EXPECT_EQ(link_target("", "next"), std::nullopt);
  EXPECT_EQ(link_target(R"(<https://a/1>; rel="prev")", "next"), std::nullopt);
  EXPECT_EQ(link_target(R"(https://a/1; rel="next")", "next"), std::nullopt);
  EXPECT_EQ(link_target(R"(<https://a/1; rel="next")", "next"), std::nullopt);
  EXPECT_EQ(link_target(R"(<https://a/1>; rel="next)", "next"), std::nullopt);
  EXPECT_EQ(link_target(R"(<https://a/1>; rel="nextpage")", "next"), std::nullopt);
}

TEST(LinkHeader, EmptyListElementsAreAllowed) {
  EXPECT_EQ(link_target(R"(, <https://a/2>; rel="next",)", "next"), "https://a/2");
}

}  // namespace
}  // namespace tidemark::connectors::http_api
