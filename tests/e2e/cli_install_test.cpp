// `cmake --install`: the binary, its man page generated from --help (when help2man
// was found at configure time) and the docs land under the prefix, and the installed binary runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/process.hpp"
#include "tests/support/run_helpers.hpp"

namespace tidemark::testing {
namespace {

using ::testing::HasSubstr;

TEST(CliInstall, InstallPutsTheBinaryTheManPageAndTheDocsUnderThePrefix) {
  TempDir prefix;
  const ProcessResult install =
      run_process(TIDEMARK_CMAKE, {"--install", TIDEMARK_BUILD_DIR, "--prefix", prefix.path().string()});
  ASSERT_EQ(install.exit_code, 0) << install.out << install.err;

  const auto binary = prefix.path() / "bin/tidemark";
  const ProcessResult version = run_process(binary.string(), {"-V"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_THAT(version.out, HasSubstr("tidemark "));

  for (const char* doc : {"cli.md", "operations.md", "configuration.md", "README.md"}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(prefix.path() / "share/doc/tidemark" / doc)) << doc;
  }
  if (!TIDEMARK_HAS_MAN_PAGE) GTEST_SKIP() << "help2man was not found when the build was configured: no man page";
  std::ifstream page(prefix.path() / "share/man/man1/tidemark.1");
  ASSERT_TRUE(page) << "no share/man/man1/tidemark.1";
  std::ostringstream text;
  text << page.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr(".TH TIDEMARK \"1\""));
  EXPECT_THAT(text.str(), HasSubstr("log\\-format"));  // the options, from --help
  EXPECT_THAT(text.str(), HasSubstr("EXIT STATUS"));   // and the sections of cmake/tidemark.h2m
}

}  // namespace
}  // namespace tidemark::testing
