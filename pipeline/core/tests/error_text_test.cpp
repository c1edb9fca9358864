#include "pipeline/core/error_text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tidemark::pipeline {
namespace {

TEST(ErrorText, IsBoundedBetweenCharacters) {
  std::string text;
  for (int i = 0; i < 3000; ++i) text += "\xC3\xA9";
  // 100 - 3 bytes for the ellipsis falls inside a character: the cut steps back before it.
  const std::string bounded = bounded_error_text(text, 100);
  EXPECT_LE(bounded.size(), 100u);
  EXPECT_EQ(bounded, [] {
    std::string expected;
    for (int i = 0; i < 48; ++i) expected += "\xC3\xA9";
    return expected + "\xE2\x80\xA6";
  }());
  EXPECT_EQ(bounded_error_text("short"), "short");
}

TEST(ErrorText, UrlCredentialsAndQueriesAreRedacted) {
  EXPECT_EQ(redact_urls("receive http://user:s3cret@127.0.0.1:9/hook?token=abc#f: connection refused"),
            "receive http://***@127.0.0.1:9/hook?***#f: connection refused");
  EXPECT_EQ(redact_urls("to https://h.example/p?a=1&b=2, then http://plain/x."),
            "to https://h.example/p?***, then http://plain/x.");
  EXPECT_EQ(redact_urls("no url here: a://"), "no url here: a://");
  EXPECT_EQ(redact_urls("http://u@h"), "http://***@h");
}

TEST(ErrorText, InvalidUtf8AndNulBecomeReplacementCharacters) {
  EXPECT_EQ(bounded_error_text(std::string("a\0b\xFF", 4)), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
}

}  // namespace
}  // namespace tidemark::pipeline
