// Permanent database errors fail fast: a malformed URL is a usage error
// (exit 2) and an unknown database or role or a failed authentication fails at once
// (exit 1) with a message that says what to fix, instead of eight "transient" retries (each
// retry logs "transient database error", so its absence proves there was none; a wall-clock
// bound would only measure the machine's load). And read-only commands never create a
// database (item 9): with none
// configured and no embedded cluster under $TIDEMARK_HOME they exit 2 naming the home and
// how to start one, and leave no cluster behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/process.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::ProcessOptions;
using testing::ProcessResult;
using testing::run_tidemark;
using testing::TempDir;
using testing::TestDatabase;

// `url` with its first `from` replaced by `to`.
std::string replaced(std::string url, const std::string& from, const std::string& to) {
  const auto at = url.find(from);
  if (at == std::string::npos) throw std::runtime_error("no '" + from + "' in " + url);
  return url.replace(at, from.size(), to);
}

TEST(DatabaseErrors, MalformedUrlIsAUsageErrorAtOnce) {
  const ProcessResult migrate = run_tidemark({"migrate", "--database", "bogus"});
  EXPECT_EQ(migrate.exit_code, 2) << migrate.err;
  EXPECT_THAT(migrate.err, HasSubstr("the database URL from --database is malformed"));
  EXPECT_THAT(migrate.err, HasSubstr("missing \"=\" after \"bogus\""));
  EXPECT_THAT(migrate.err, ::testing::Not(HasSubstr("transient")));

  ProcessOptions options;
  options.env["TIDEMARK_DATABASE_URL"] = "postgresql://127.0.0.1:notaport/x";
  const ProcessResult env = run_tidemark({"quarantine", "list"}, options);
  EXPECT_EQ(env.exit_code, 2) << env.err;
  EXPECT_THAT(env.err, HasSubstr("TIDEMARK_DATABASE_URL"));
}

TEST(DatabaseErrors, RejectedConnectionsFailAtOnceSayingWhatToFix) {
  const TestDatabase db;
  struct Case {
    std::string what;
    std::string url;
    std::string says;
  };
  const std::vector<Case> cases{
      {"unknown database", replaced(db.url(), "/" + db.name() + "?", "/no_such_database?"),
       "database \"no_such_database\" does not exist"},
      // The passfile has no line for that role, and scram never says whether a role exists.
      {"unknown role", replaced(db.url(), "postgres@", "no_such_role@"), "no password supplied"},
      {"wrong password", db.url() + "&password=wrong", "password authentication failed"},
  };
  for (const auto& [what, url, says] : cases) {
    const ProcessResult migrate = run_tidemark({"migrate", "--database", url});
    EXPECT_EQ(migrate.exit_code, 1) << what << ": " << migrate.err;
    EXPECT_THAT(migrate.err, HasSubstr(says)) << what;
    EXPECT_THAT(migrate.err, HasSubstr("check the database name, the user and its password")) << what;
    EXPECT_THAT(migrate.err, ::testing::Not(HasSubstr("transient"))) << what;
  }
}

TEST(ReadOnlyCommands, NeverCreateADatabase) {
  TempDir work;
  const fs::path home = work.path() / "home";
  const std::vector<std::vector<std::string>> commands{
      {"quarantine", "list"}, {"quarantine", "show", "1"}, {"outbox", "list"},
      {"views", "list"},      {"db", "status"},            {"db", "url"},
  };
  for (const auto& command : commands) {
    const std::string name = command[0] + " " + command[1];
    ProcessOptions options;
    options.env["TIDEMARK_HOME"] = home.string();
    options.working_directory = work.path();
    const ProcessResult result = run_tidemark(command, options);
    EXPECT_EQ(result.exit_code, 2) << name << ": " << result.err;
    EXPECT_THAT(result.err, HasSubstr("no embedded cluster under $TIDEMARK_HOME (" + home.string() + ")")) << name;
    EXPECT_THAT(result.err, HasSubstr("tidemark db start")) << name;
  }
  // Without TIDEMARK_HOME the home is ./.tidemark.
  ProcessOptions options;
  options.env["TIDEMARK_HOME"] = std::nullopt;
  options.working_directory = work.path();
  const ProcessResult result = run_tidemark({"quarantine", "list"}, options);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_THAT(result.err, HasSubstr((work.path() / ".tidemark").string()));

  EXPECT_FALSE(fs::exists(home)) << "a read-only command created the home";
  EXPECT_FALSE(fs::exists(work.path() / ".tidemark")) << "a read-only command created ./.tidemark";
}

}  // namespace
}  // namespace tidemark
