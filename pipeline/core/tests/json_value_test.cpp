#include "pipeline/core/json_value.hpp"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

namespace tidemark::pipeline {
namespace {

// The canonical text, or a marker that makes an unexpected rejection visible.
std::string canonical(std::string_view text) {
  const auto result = canonical_json(text);
  if (const auto* rejection = std::get_if<Rejection>(&result)) return "<rejected: " + rejection->detail + ">";
  return std::get<std::string>(result);
}

std::string rejection_of(std::string_view text) {
  const auto result = canonical_json(text);
  if (const auto* rejection = std::get_if<Rejection>(&result)) return rejection->detail;
  return "<accepted: " + std::get<std::string>(result) + ">";
}

// A text and what canonical_json makes of it: the canonical text, or the rejection's detail.
struct Case {
  std::string text;
  std::string expected;
};

// Each case's canonical text; a failure names the case's text.
void expect_canonical(const std::vector<Case>& cases) {
  for (const auto& c : cases) EXPECT_EQ(canonical(c.text), c.expected) << "text: " << c.text;
}

// Each case's rejection; a failure names the case's text.
void expect_rejections(const std::vector<Case>& cases) {
  for (const auto& c : cases) EXPECT_EQ(rejection_of(c.text), c.expected) << "text: " << c.text;
}

// Expected values below are what PostgreSQL 15 prints for '<text>'::jsonb::text.
TEST(CanonicalJson, ObjectKeysAreOrderedByLengthThenBytesAndTheLastDuplicateWins) {
  expect_canonical({
      {R"({"bb":1,"a":{"x":[1,"y"],"c":true},"a":null, "aa": 2})", R"({"a": null, "aa": 2, "bb": 1})"},
      {R"({"b":1,"a":2,"b":3})", R"({"a": 2, "b": 3})"},
      {R"({"é":1,"z":2,"ab":3})", R"({"z": 2, "ab": 3, "é": 1})"},  // é is two bytes
      {R"({"B":1,"a":2})", R"({"B": 1, "a": 2})"},
  });
}

TEST(CanonicalJson, SeparatorsAndWhitespaceAreJsonbs) {
  expect_canonical({
      {" [1,{\"a\":[]},\t{}]\r\n", R"([1, {"a": []}, {}])"},
      {"[ ]", "[]"},
      {" true ", "true"},
      {"null", "null"},
  });
}

TEST(CanonicalJson, NumbersPrintAsNumericPrintsThem) {
  expect_canonical({
      {"-0", "0"},
      {"-0.0", "0.0"},
      {"1e2", "100"},
      {"1E+05", "100000"},
      {"1.50", "1.50"},
      {"1.0e-2", "0.010"},
      {"-1.5e-3", "-0.0015"},
      {"0e5", "0"},
      {"0.000e2", "0.0"},
      {"123e-2", "1.23"},
      {"12345678901234567890.123456789e-5", "123456789012345.67890123456789"},
      {"0e200000", "0"},
  });
}

TEST(CanonicalJson, NumbersNumericCannotHoldAreRejected) {
  EXPECT_EQ(canonical("1e131071").size(), 131072u);
  EXPECT_EQ(canonical("1e-16383").size(), 16385u);
  expect_rejections({
      {"1e131072", "more than 131072 digits before the point at byte 0"},
      {"[1e-16384]", "more than 16383 digits after the point at byte 1"},
      {"1.5e-16383", "more than 16383 digits after the point at byte 0"},
      {"0e-16384", "more than 16383 digits after the point at byte 0"},
      {"1e2000000000", "a number that numeric cannot hold at byte 0"},
      {"1e-99999999999999999999", "a number that numeric cannot hold at byte 0"},
  });
}

TEST(CanonicalJson, NumberGrammarIsStrict) {
  for (const char* bad : {"01", "-01", "-", "1.", ".5", "+1", "1e", "00", "[01]", "NaN", "Infinity", "0x1"}) {
    EXPECT_NE(rejection_of(bad).find("at byte"), std::string::npos) << bad;
  }
}

TEST(CanonicalJson, StringsAreReescapedAsJsonbPrintsThem) {
  expect_canonical({
      {R"("\u00e9\/\"\\")", "\"\xC3\xA9/\\\"\\\\\""},
      {R"("\b\f\t\r\n")", R"("\b\f\t\r\n")"},
      {R"("\u0001\u001F")", R"("\u0001\u001f")"},
      {"\"a\x7F" "b\"", "\"a\x7F" "b\""},  // DEL is printed as it is
      {R"("\ud83d\ude00x")", "\"\xF0\x9F\x98\x80x\""},
      {R"("\uFFFF")", "\"\xEF\xBF\xBF\""},
  });
  EXPECT_EQ(json_quoted(std::string("a\x01\x1f\"", 4)), R"("a\u0001\u001f\"")");
}

TEST(CanonicalJson, StringsJsonbRefusesAreRejected) {
  expect_rejections({
      {R"("\u0000")", "\\u0000 (jsonb cannot hold NUL) at byte 7"},
      {R"("\ud83d")", "a high surrogate without a low one at byte 7"},
      {R"("\ud83d\u0041")", "a high surrogate without a low one at byte 13"},
      {R"("\ude00")", "a low surrogate without a high one at byte 7"},
      {R"("\u00")", "\\u not followed by 4 hex digits at byte 3"},
      {R"("\x41")", "invalid escape at byte 2"},
      {"\"a\tb\"", "control character in a string (must be escaped) at byte 2"},
      {"\"a\xFF\"", "invalid UTF-8 at byte 2"},
      {"\"\xC0\xAF\"", "invalid UTF-8 at byte 1"},
      {"\"abc", "unterminated string at byte 4"},
  });
}

TEST(CanonicalJson, StructureErrorsAreRejected) {
  expect_rejections({
      {"[1,]", "not a JSON value at byte 3"},
      {R"({"a":1,})", "expected a string key at byte 7"},
      {R"({"a" 1})", "expected ':' at byte 5"},
      {"[1 2]", "expected ',' or ']' at byte 3"},
      {"1 2", "text after the JSON value at byte 2"},
      {"", "end of text where a value should be at byte 0"},
      {"[1,\f2]", "not a JSON value at byte 3"},  // form feed is not JSON whitespace
      {"tru", "not a JSON value at byte 0"},
      {"abc", "not a JSON value at byte 0"},
  });
}

TEST(CanonicalJson, NestingIsBounded) {
  const std::string deepest = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_EQ(canonical(deepest), deepest);
  const std::string deeper = "[" + deepest + "]";
  EXPECT_EQ(rejection_of(deeper), "nested deeper than 256 at byte 256");
}

TEST(CanonicalJson, CanonicalFormIsAFixedPoint) {
  for (const char* text : {R"({"b":[1.0e1,{"y":"\u0007","x":-0}],"a":"é"})", "[true,false,null]", "1.5E3"}) {
    const std::string once = canonical(text);
    EXPECT_EQ(canonical(once), once) << text;
  }
}

TEST(CanonicalJsonNumber, OnlyANumberIsANumber) {
  EXPECT_EQ(std::get<std::string>(canonical_json_number("2.50e1")), "25.0");
  EXPECT_TRUE(std::holds_alternative<Rejection>(canonical_json_number("\"1\"")));
  EXPECT_TRUE(std::holds_alternative<Rejection>(canonical_json_number("true")));
  EXPECT_TRUE(std::holds_alternative<Rejection>(canonical_json_number("[1]")));
}

}  // namespace
}  // namespace tidemark::pipeline
