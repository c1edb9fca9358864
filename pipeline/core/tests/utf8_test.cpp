#include "pipeline/core/utf8.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tidemark::pipeline {
namespace {

TEST(Utf8, DecodesWellFormedSequencesOfEveryLength) {
  EXPECT_EQ(decode_utf8("a").length, 1u);
  EXPECT_EQ(decode_utf8("a").code_point, U'a');
  EXPECT_EQ(decode_utf8("\xC3\xA9x").length, 2u);  // é, then more bytes
  EXPECT_EQ(decode_utf8("\xC3\xA9x").code_point, U'\u00E9');
  EXPECT_EQ(decode_utf8("\xE2\x82\xAC").code_point, U'\u20AC');
  EXPECT_EQ(decode_utf8("\xF0\x9F\x98\x80").length, 4u);
  EXPECT_EQ(decode_utf8("\xF0\x9F\x98\x80").code_point, U'\U0001F600');
  EXPECT_EQ(decode_utf8("\xF4\x8F\xBF\xBF").code_point, U'\U0010FFFF');
  // NUL is well-formed; refusing it is the caller's rule.
  EXPECT_EQ(decode_utf8(std::string("\0", 1)).length, 1u);
  EXPECT_EQ(decode_utf8(std::string("\0", 1)).code_point, U'\0');
}

TEST(Utf8, RefusesWhatTable3_7Refuses) {
  for (const std::string bytes : {"", "\x80", "\xBF", "\xC0\xAF", "\xC1\xBF", "\xE0\x9F\xBF", "\xED\xA0\x80",
                                  "\xF0\x8F\xBF\xBF", "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xFF", "\xC3",
                                  "\xE2\x82", "\xC3(", "\xE2\x28\xA1"}) {
    EXPECT_EQ(decode_utf8(bytes).length, 0u) << testing::PrintToString(bytes);
  }
}

TEST(Utf8, StorableLengthRefusesNulAsTextColumnsDo) {
  EXPECT_EQ(storable_utf8_length("\xC3\xA9"), 2u);
  EXPECT_EQ(storable_utf8_length(std::string("\0a", 2)), 0u);
  EXPECT_EQ(storable_utf8_length("\xFF"), 0u);
}

TEST(Utf8, StorableTextReplacesEachBadByteAndSaysSo) {
  bool changed = false;
  EXPECT_EQ(storable_text("caf\xC3\xA9", changed), "caf\xC3\xA9");
  EXPECT_FALSE(changed);
  EXPECT_EQ(storable_text(std::string("a\xFF\0b\xC3", 5), changed),
            "a\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  EXPECT_TRUE(changed);
}

TEST(Utf8, PrefixLengthNeverSplitsASequence) {
  const std::string text = "ab\xE2\x82\xAC" "c";  // a b € c
  EXPECT_EQ(utf8_prefix_length(text, 10), text.size());
  EXPECT_EQ(utf8_prefix_length(text, text.size()), text.size());
  EXPECT_EQ(utf8_prefix_length(text, 5), 5u);  // after the €
  EXPECT_EQ(utf8_prefix_length(text, 4), 2u);  // inside the €: back to its start
  EXPECT_EQ(utf8_prefix_length(text, 3), 2u);
  EXPECT_EQ(utf8_prefix_length(text, 2), 2u);
  EXPECT_EQ(utf8_prefix_length(text, 0), 0u);
}

}  // namespace
}  // namespace tidemark::pipeline
