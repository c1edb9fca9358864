// The exit code of a failed command comes from its error's kind alone: the user's mistakes
// (usage, config) exit 2, everything else 1, whatever class carries the kind.
#include <gtest/gtest.h>

#include <stdexcept>

#include "app/cli/exit_status.hpp"
#include "pipeline/store/pg/database.hpp"
#include "pipeline/store/pipeline_lock.hpp"

namespace tidemark::app {
namespace {

template <class Thrown>
int exit_code_of(const Thrown& thrown) {
  try {
    throw thrown;
  } catch (...) {
    return exit_code_for_current_exception();
  }
}

TEST(ExitStatusTest, TheUsersMistakesExit2AndEverythingElse1) {
  EXPECT_EQ(exit_code_of(UsageError("--batch-size 0")), kExitUsage);
  EXPECT_EQ(exit_code_of(app::config::ConfigError("tidemark.yaml:3: unknown key")), kExitUsage);
  EXPECT_EQ(exit_code_of(pipeline::db::InvalidDatabaseUrl("missing \"=\"")), kExitUsage);
  EXPECT_EQ(exit_code_of(pipeline::db::RetriesExhausted("connecting")), kExitFailed);
  EXPECT_EQ(exit_code_of(pipeline::db::ConnectionRejected("password authentication failed")), kExitFailed);
  EXPECT_EQ(exit_code_of(pipeline::PipelineBusy("pipeline 'p' is already running")), kExitFailed);
  EXPECT_EQ(exit_code_of(std::runtime_error("anything else")), kExitFailed);
  EXPECT_EQ(exit_code_of(42), kExitFailed);
}

TEST(ExitStatusTest, EveryKindHasItsCode) {
  EXPECT_EQ(exit_code_for(ErrorKind::kUsage), kExitUsage);
  EXPECT_EQ(exit_code_for(ErrorKind::kConfig), kExitUsage);
  EXPECT_EQ(exit_code_for(ErrorKind::kTransient), kExitFailed);
  EXPECT_EQ(exit_code_for(ErrorKind::kPermanent), kExitFailed);
  EXPECT_EQ(exit_code_for(ErrorKind::kConflict), kExitFailed);
}

}  // namespace
}  // namespace tidemark::app
