// A nats partition's checkpoint text: "<sequence>@<stream creation time>", parsed back
// exactly and ordered by stream (creation time) then sequence.
#include "connectors/nats/position.hpp"

#include <gtest/gtest.h>

namespace tidemark::connectors::nats {
namespace {

TEST(NatsPosition, CreationTimeIsRfc3339UtcWithNineFractionDigits) {
  EXPECT_EQ(format_created(0), "1970-01-01T00:00:00.000000000Z");
  // 2026-12-02T16:48:41.000000123Z
  EXPECT_EQ(format_created(1796230121000000123), "2026-12-02T16:48:41.000000123Z");
  // Before the epoch the fraction stays positive.
  EXPECT_EQ(format_created(-1), "1969-12-31T23:59:59.999999999Z");
}

TEST(NatsPosition, TextRoundTripsTheSequenceAndTheCreationTime) {
  const StreamPosition position{1042, "2026-12-02T16:48:41.123456789Z"};
  EXPECT_EQ(to_text(position), "1042@2026-12-02T16:48:41.123456789Z");
  EXPECT_EQ(parse_position(to_text(position)), position);
  EXPECT_EQ(parse_position("0@1970-01-01T00:00:00.000000000Z"), (StreamPosition{0, "1970-01-01T00:00:00.000000000Z"}));
}

TEST(NatsPosition, AnythingElseIsRefused) {
  for (const char* text : {"", "42", "@2026-12-02T16:48:41.123456789Z", "042@2026-12-02T16:48:41.123456789Z",
                           "-1@2026-12-02T16:48:41.123456789Z", "+1@2026-12-02T16:48:41.123456789Z",
                           "1@2026-12-02T16:48:41Z", "1@2026-12-02 16:48:41.123456789Z",
                           "1@2026-12-02T16:48:41.123456789", "18446744073709551616@2026-12-02T16:48:41.123456789Z",
                           "1@2026-12-02T16:48:41.123456789Z@", R"({"page":1})"}) {
    EXPECT_EQ(parse_position(text), std::nullopt) << text;
  }
}

TEST(NatsPosition, ANewerStreamComesAfterAnyPositionOfAnOlderOne) {
  const std::string older = "2026-12-01T00:00:00.000000000Z";
  const std::string newer = "2026-12-02T00:00:00.000000000Z";
  EXPECT_TRUE(precedes({5, older}, {6, older}));
  EXPECT_FALSE(precedes({6, older}, {6, older}));
  EXPECT_FALSE(precedes({7, older}, {6, older}));
  EXPECT_TRUE(precedes({900, older}, {1, newer}));
  EXPECT_FALSE(precedes({1, newer}, {900, older}));
}

}  // namespace
}  // namespace tidemark::connectors::nats
