#include "pipeline/store/pg/pg_text.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tidemark::pipeline::db {
namespace {

TEST(PgText, CopyTextEscapesWhatTheTextFormatReserves) {
  std::string line = "x\t";
  append_copy_text(line, "a\\b\tc\nd\re\"f");
  EXPECT_EQ(line, "x\ta\\\\b\\tc\\nd\\re\"f");
  append_copy_text(line, "");
  EXPECT_EQ(line, "x\ta\\\\b\\tc\\nd\\re\"f");
}

TEST(PgText, ArrayLiteralQuotesEveryElementAndEscapesQuotesAndBackslashes) {
  EXPECT_EQ(text_array_literal({}), "{}");
  EXPECT_EQ(text_array_literal({"a"}), "{\"a\"}");
  EXPECT_EQ(text_array_literal({"a", "b-c_1"}), "{\"a\",\"b-c_1\"}");
  // Without quoting these would split, vanish or turn into NULL.
  EXPECT_EQ(text_array_literal({"x,y", "", "NULL", " s "}), "{\"x,y\",\"\",\"NULL\",\" s \"}");
  EXPECT_EQ(text_array_literal({"q\"b\\{}"}), "{\"q\\\"b\\\\{}\"}");
}

TEST(PgText, BigintArrayLiteral) {
  EXPECT_EQ(bigint_array_literal({}), "{}");
  EXPECT_EQ(bigint_array_literal({7}), "{7}");
  EXPECT_EQ(bigint_array_literal({1, -2, 9223372036854775807}), "{1,-2,9223372036854775807}");
}

}  // namespace
}  // namespace tidemark::pipeline::db
