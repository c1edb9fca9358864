// The postgres source's checkpoint text: a JSON array of the cursor values' canonical text.
#include "connectors/postgres/cursor.hpp"

#include <gtest/gtest.h>

namespace tidemark::connectors::postgres {
namespace {

TEST(PostgresCursor, FormatsEachValueAsAJsonStringWithoutSpaces) {
  EXPECT_EQ(format_cursor({"2026-12-01 06:00:00.25+00", "1041"}), R"(["2026-12-01 06:00:00.25+00","1041"])");
  EXPECT_EQ(format_cursor({}), "[]");
}

TEST(PostgresCursor, ValuesOfAnyTextRoundTripExactly) {
  const CursorValues values{"12345678901234567890.000000000001", "a \"quoted\" \\ value", "tab\tnewline\n",
                            "\x01 control", "h\xC3\xA9llo \xF0\x9F\x98\x80", ""};
  EXPECT_EQ(parse_cursor(format_cursor(values)), values);
}

TEST(PostgresCursor, ParsesEveryJsonEscapeAndWhitespace) {
  EXPECT_EQ(parse_cursor(" [ \"a\\/b\" ,\n\"\\u00e9\\ud83d\\ude00\\b\\f\\r\" ] "),
            (CursorValues{"a/b", "\xC3\xA9\xF0\x9F\x98\x80\b\f\r"}));
  EXPECT_EQ(parse_cursor("[]"), CursorValues{});
}

TEST(PostgresCursor, RefusesAnythingButAnArrayOfStrings) {
  for (const char* text : {"", "{}", "\"a\"", "[1]", "[\"a\",]", "[\"a\"", "[\"a\"] x", "[\"a\" \"b\"]",
                           "[\"\\u0000\"]", "[\"\\ud83d\"]", "[\"\\ude00\"]", "[\"\\x\"]", "[\"\x01\"]",
                           "[\"\xC3\"]", "[null]", "[\"\\u12\"]"}) {
    EXPECT_EQ(parse_cursor(text), std::nullopt) << text;
  }
}

}  // namespace
}  // namespace tidemark::connectors::postgres
