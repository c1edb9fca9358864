// The one percent-encoder: each caller's own set of kept bytes, every other byte as %XX.
#include <gtest/gtest.h>

#include <string>

#include "pipeline/core/percent_encode.hpp"

namespace tidemark::pipeline {
namespace {

TEST(PercentEncode, KeepsWhatTheCallerKeepsAndWritesEveryOtherByteAsUpperCaseHex) {
  EXPECT_EQ(percent_encode("after:17 é/&=~-._", is_url_unreserved), "after%3A17%20%C3%A9%2F%26%3D~-._");
  EXPECT_EQ(percent_encode(std::string("\x00\xFF%", 3), is_url_unreserved), "%00%FF%25");
  EXPECT_EQ(percent_encode("a/b c", [](unsigned char byte) { return is_url_unreserved(byte) || byte == '/'; }),
            "a/b%20c");
  EXPECT_EQ(percent_encode("", is_url_unreserved), "");
}

TEST(PercentEncode, UnreservedIsRfc3986s) {
  std::string kept;
  for (int byte = 0; byte < 256; ++byte) {
    if (is_url_unreserved(static_cast<unsigned char>(byte))) kept += static_cast<char>(byte);
  }
  EXPECT_EQ(kept, "-.0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~");
}

}  // namespace
}  // namespace tidemark::pipeline
