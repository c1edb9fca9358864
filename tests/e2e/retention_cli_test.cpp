// `tidemark retention run` as a real process against a real PostgreSQL (docs/retention.md):
// its help, a dry run that deletes nothing, and a run that prints what it deleted per kind
// with the windows of --config.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "tests/support/change_log_store.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark {
namespace {

using testing::ProcessResult;
using testing::TestDatabase;
using testing::run_tidemark;
using ::testing::HasSubstr;

TEST(RetentionCli, HelpNamesEveryWindowAndTheOptions) {
  const ProcessResult result = run_tidemark({"retention", "run", "--help"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("Usage"));
  for (const char* mention : {"retention.outbox", "retention.runs", "retention.quarantine", "retention.requests",
                              "retention.inbox", "--dry-run", "--config", "--database"}) {
    EXPECT_THAT(result.out, HasSubstr(mention));
  }
}

TEST(RetentionCli, RunDeletesPastTheConfiguredWindowsAndPrintsEachKind) {
  TestDatabase db;
  std::string pattern = (std::filesystem::temp_directory_path() / "tidemark-retention-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  const std::filesystem::path folder = pattern;
  const std::string config = (folder / "config.yaml").string();
  std::ofstream(config) << "retention: {outbox: 2h, quarantine: 1h}\n";
  // Two events of hooks, logged 3 hours and 1 hour ago, both delivered.
  auto connection = db.connect();
  {
    pqxx::work txn(*connection);
    testing::append_aged_change(txn, "hooks", "old", "3 hours");
    testing::append_aged_change(txn, "hooks", "new", "1 hour");
    txn.commit();
  }
  ASSERT_EQ(testing::settle_due(*connection, "hooks", testing::Settlement::kDelivered), 2);
  db.scalar("INSERT INTO quarantine (pipeline, source, reason, detail, raw, format, position, created_at, released_at) "
            "VALUES ('p', 's', 'invalid', 'd', 'a', 'csv', '1', now() - interval '3 hours', now() - interval '2 hours') "
            "RETURNING 1");

  const auto dry = run_tidemark({"retention", "run", "--dry-run", "--config", config, "--database", db.url()});
  EXPECT_EQ(dry.exit_code, 0) << dry.both();
  EXPECT_THAT(dry.out, HasSubstr("kind\twould_delete\noutbox\t1\n"));
  EXPECT_THAT(dry.out, HasSubstr("quarantine\t1\n"));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM outbox"), "2");

  const auto run = run_tidemark({"retention", "run", "--config", config, "--database", db.url()});
  EXPECT_EQ(run.exit_code, 0) << run.both();
  EXPECT_THAT(run.out, HasSubstr("kind\tdeleted\noutbox\t1\nbatch_ledger\t0\nruns\t0\nquarantine\t1\nrequests\t0\n"
                                 "inbox\t0\n"));
  EXPECT_EQ(db.scalar("SELECT string_agg(idempotency_key, ',') FROM outbox"), "hooks:new");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM quarantine"), "0");
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace tidemark
