// The file source's one format_from_extension: a path the user names (config
// source.path, --source) matches its extension ignoring case; a folder source takes only
// the files whose extension is spelt exactly.
#include "connectors/file/format.hpp"

#include <gtest/gtest.h>

namespace tidemark::connectors::file {
namespace {

TEST(FormatFromExtension, ANamedPathIgnoresCase) {
  EXPECT_EQ(format_from_extension("in/DATA.CSV", ExtensionCase::kIgnore), Format::kCsv);
  EXPECT_EQ(format_from_extension("data.JsonL", ExtensionCase::kIgnore), Format::kJsonl);
  EXPECT_EQ(format_from_extension("data.NDJSON", ExtensionCase::kIgnore), Format::kJsonl);
  EXPECT_EQ(format_from_extension("data.csv", ExtensionCase::kIgnore), Format::kCsv);
  EXPECT_EQ(format_from_extension("data.JSON", ExtensionCase::kIgnore), std::nullopt);
  EXPECT_EQ(format_from_extension("data", ExtensionCase::kIgnore), std::nullopt);
}

TEST(FormatFromExtension, AFolderListingMatchesTheExactSpelling) {
  EXPECT_EQ(format_from_extension("part-01.csv"), Format::kCsv);
  EXPECT_EQ(format_from_extension("part-01.jsonl", ExtensionCase::kExact), Format::kJsonl);
  EXPECT_EQ(format_from_extension("part-99.CSV"), std::nullopt);
  EXPECT_EQ(format_from_extension("part-99.JsonL"), std::nullopt);
}

TEST(FormatNames, ToStringIsWhatParseFormatReads) {
  for (const auto format : {Format::kCsv, Format::kJsonl}) EXPECT_EQ(parse_format(to_string(format)), format);
}

}  // namespace
}  // namespace tidemark::connectors::file
