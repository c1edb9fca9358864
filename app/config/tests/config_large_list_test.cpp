// A config with a long list: reading it is linear in its size now (it was
// quadratic: 100k items took 35 s to check; bench/config_bench.cpp measures the ratio), and
// it still reads every item, with each error and each destination at its own line, and a YAML
// alias still interpolated once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include <string>

#include "app/config/config.hpp"
#include "app/config/tests/config_errors.hpp"

namespace tidemark::app::config {
namespace {

using ::testing::ElementsAre;

constexpr int kItems = 20'000;

TEST(ConfigLargeList, EveryItemIsReadWithItsLineAndEachErrorAtItsLine) {
  ::unsetenv("TIDEMARK_TEST_UNSET_COLUMN");
  std::string yaml =
      "pipelines:\n"                        // 1
      "  p:\n"                              // 2
      "    source: {path: in.csv}\n"        // 3
      "    destinations:\n";                // 4; destination i at line 5 + i
  for (int i = 0; i < kItems; ++i) {
    yaml += "      - {name: d" + std::to_string(i) + ", kind: http, url: http://127.0.0.1:9/x, secret_env: S}\n";
  }
  const ConfigCheck good = check_config(yaml, "big.yaml");
  ASSERT_TRUE(good.errors.empty()) << good.errors.front();
  const auto& destinations = good.config.pipelines.at("p").destinations;
  ASSERT_EQ(destinations.size(), static_cast<std::size_t>(kItems));
  for (const int i : {0, 1, kItems / 2, kItems - 1}) {
    EXPECT_EQ(destinations[i].name, "d" + std::to_string(i));
    EXPECT_EQ(destinations[i].line, 5 + i) << i;
  }

  // Two faults far down the list, then a cursor of many columns with one more at its end.
  const int repeated_line = 5 + kItems;
  yaml += "      - {name: d7, kind: http, url: http://127.0.0.1:9/x, secret_env: S}\n";
  yaml += "      - {name: late, kind: http, url: \"${TIDEMARK_TEST_UNSET_COLUMN}\", secret_env: S}\n";
  yaml += "  q:\n    source:\n      kind: postgres\n      url_env: SOURCE_URL\n      table: t\n      cursor:\n";
  const int cursor_line = repeated_line + 8;  // its first column
  for (int i = 0; i < kItems; ++i) yaml += "        - c" + std::to_string(i) + "\n";
  yaml += "        - c123\n";
  const ConfigCheck bad = check_config(yaml, "big.yaml");
  EXPECT_THAT(
      bad.errors,
      ElementsAre("big.yaml:" + std::to_string(repeated_line) +
                      ": pipelines.p.destinations[20000].name: destination 'd7' is already defined at line 12 "
                      "(destination names must be unique across the file; only a view destination may be listed by "
                      "several pipelines)",
                  "big.yaml:" + std::to_string(repeated_line + 1) +
                      ": pipelines.p.destinations[20001].url: environment variable TIDEMARK_TEST_UNSET_COLUMN is not "
                      "set (set it, or give a default: ${TIDEMARK_TEST_UNSET_COLUMN:-VALUE})",
                  "big.yaml:" + std::to_string(cursor_line + kItems) +
                      ": pipelines.q.source.cursor[20000]: column c123 is in the cursor twice"));
}

// A node reached twice (an alias of an anchored value) is interpolated once: the value a
// variable brings in is not read for variables again on the second visit.
TEST(ConfigLargeList, AnAliasedValueIsInterpolatedOnce) {
  ::setenv("TIDEMARK_TEST_X", "x", 1);
  ::setenv("TIDEMARK_TEST_NESTED", "${TIDEMARK_TEST_X}.csv", 1);
  const Config config = parse_config(
      "pipelines:\n"
      "  p:\n    source: {path: &folder \"${TIDEMARK_TEST_NESTED}\"}\n"
      "  q:\n    source: {path: *folder}\n",
      "config.yaml");
  ::unsetenv("TIDEMARK_TEST_X");
  ::unsetenv("TIDEMARK_TEST_NESTED");
  EXPECT_EQ(file_of(config.pipelines.at("p").source).path, "${TIDEMARK_TEST_X}.csv");
  EXPECT_EQ(file_of(config.pipelines.at("q").source).path, "${TIDEMARK_TEST_X}.csv");
}

}  // namespace
}  // namespace tidemark::app::config
