// `tidemark run --dry-run` (docs/cli.md "run"): real tidemark processes against a
// throwaway PostgreSQL. A dry run reports what a real run on the same input then reports,
// batch by batch (a key changed across batches included: each batch sees the ones before
// it), and leaves every table as it was; it takes the pipeline's lock like a run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <pqxx/pqxx>

#include "tests/support/process.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark {
namespace {

using testing::ProcessOptions;
using testing::ProcessResult;
using testing::Rows;
using testing::TempDir;
using testing::TestDatabase;
using testing::query_rows;
using testing::run_tidemark;
using ::testing::HasSubstr;

constexpr char kSecretEnv[] = "TIDEMARK_DRY_RUN_TEST_SECRET";
constexpr char kOutcomes[] = "inserted, updated, unchanged, stale, superseded, duplicate, invalid, conflict";

std::string destination(const std::string& name = "ledger") {
  return "    destinations:\n      - {name: " + name + ", kind: http, url: http://127.0.0.1:9/hook, secret_env: " +
         kSecretEnv + "}\n";
}

std::string last_line(const std::string& text) {
  const auto end = text.find_last_not_of('\n');
  const auto start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// Every table a run writes, whole: a dry run must leave each exactly as it was.
std::map<std::string, Rows> every_table(const TestDatabase& db, const std::vector<std::string>& more = {}) {
  std::vector<std::string> tables = {"transaction_state", "outbox",  "quarantine",
                                     "checkpoint",        "batch_ledger", "runs",
                                     "tidemark_change",   "tidemark_partition_sequence",
                                     "tidemark_destination", "tidemark_entities"};
  tables.insert(tables.end(), more.begin(), more.end());
  std::map<std::string, Rows> rows;
  for (const std::string& table : tables) rows[table] = query_rows(db, "SELECT * FROM " + table + " ORDER BY 1");
  return rows;
}

class DryRun : public ::testing::Test {
 protected:
  ProcessResult tidemark(const std::string& config_text, std::vector<std::string> args) {
    const auto config = dir_.write("config.yaml", config_text);
    args.insert(args.end(), {"--config", config.string(), "--database", db_.url()});
    ProcessOptions options;
    options.env[kSecretEnv] = "whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ=";
    return run_tidemark(args, options);
  }
  boost::json::object summary(const ProcessResult& result) {
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    return boost::json::parse(last_line(result.out)).as_object();
  }
  // The counts of a summary a dry run and a real run must agree on: all but run_id and dry_run.
  // As text, so that a failed comparison shows both.
  static std::string counts(const boost::json::object& json) {
    std::map<std::string, std::string> fields;  // by name: erase would reorder the object
    for (const auto& field : json) {
      if (field.key() != "run_id" && field.key() != "dry_run") fields[field.key()] = boost::json::serialize(field.value());
    }
    std::string text;
    for (const auto& [name, value] : fields) text += name + "=" + value + " ";
    return text;
  }
  // The per-batch log lines of the real run `run_id`, as a dry run logs its own batches.
  std::vector<std::string> batch_lines(const std::string& pipeline, std::int64_t run_id) {
    std::vector<std::string> lines;
    for (const auto& row : query_rows(db_, "SELECT batch_no, input, " + std::string(kOutcomes) +
                                               " FROM batch_ledger WHERE run_id = " + std::to_string(run_id) +
                                               " ORDER BY batch_no")) {
      std::string line = "pipeline " + pipeline + " batch " + row[0] + ": input " + row[1];
      const char* names[] = {"inserted", "updated", "unchanged", "stale", "superseded", "duplicate", "invalid",
                             "conflict"};
      for (std::size_t i = 0; i < 8; ++i) line += std::string(" ") + names[i] + " " + row[i + 2];
      lines.push_back(line + " |");
    }
    return lines;
  }

  TestDatabase db_;
  TempDir dir_;
};

// Batches of 3; every outcome, against stored rows and against the dry run's own earlier batches.
TEST_F(DryRun, BuiltInEntityReportsWhatTheRealRunThenReportsAndWritesNothing) {
  const auto seed = dir_.write("seed.csv",
                               "transaction_id,source_revision,amount,account_id,occurred_at\n"
                               "s1,2,1.00,acct,\n"
                               "s2,1,2.00,acct,\n"
                               "s3,1,3.00,acct,\n");
  const auto input = dir_.write("in.csv",
                                "transaction_id,source_revision,amount,account_id,occurred_at\n"
                                // batch 1: inserted, updated (stored s1,2), unchanged (stored s2,1)
                                "k,1,1.00,acct,\n"
                                "s1,3,1.50,acct,\n"
                                "s2,1,2.00,acct,\n"
                                // batch 2: updated (batch 1's k,1), stale, conflict (stored s3,1)
                                "k,2,2.00,acct,\n"
                                "s1,1,9.00,acct,\n"
                                "s3,1,9.99,acct,\n"
                                // batch 3: unchanged (batch 2's k,2), stale (k,1), invalid
                                "k,2,2.00,acct,\n"
                                "k,1,1.00,acct,\n"
                                "m,1,NaN,acct,\n"
                                // batch 4: superseded, inserted, duplicate
                                "n,1,1.00,acct,\n"
                                "n,2,2.00,acct,\n"
                                "n,2,2.00,acct,\n"
                                // batch 5: conflict with batch 2's k,2
                                "k,2,3.00,acct,\n");
  const std::string config = "pipelines:\n  seed:\n    source: {kind: file, path: " + seed.string() +
                             ", format: csv}\n" + destination("seeded") + "  p:\n    source: {kind: file, path: " +
                             input.string() + ", format: csv}\n    batch_size: 3\n" + destination();
  summary(tidemark(config, {"run", "--pipeline", "seed", "--json"}));

  const auto before = every_table(db_);
  const ProcessResult dry = tidemark(config, {"run", "--pipeline", "p", "--dry-run", "--json"});
  const boost::json::object dry_summary = summary(dry);
  EXPECT_EQ(every_table(db_), before) << "a dry run wrote to a table";
  EXPECT_TRUE(dry_summary.at("dry_run").as_bool());
  EXPECT_TRUE(dry_summary.at("run_id").is_null());

  const ProcessResult real = tidemark(config, {"run", "--pipeline", "p", "--json"});
  const boost::json::object real_summary = summary(real);
  EXPECT_FALSE(real_summary.contains("dry_run"));
  EXPECT_EQ(counts(dry_summary), counts(real_summary)) << "dry: " << dry.out << "\nreal: " << real.out;
  EXPECT_EQ(real_summary.at("batches").to_number<std::int64_t>(), 5);
  for (const char* outcome : {"inserted", "updated", "unchanged", "stale", "superseded", "duplicate", "invalid"}) {
    EXPECT_GT(real_summary.at(outcome).to_number<std::int64_t>(), 0) << outcome << " not exercised";
  }
  EXPECT_EQ(real_summary.at("conflict").to_number<std::int64_t>(), 2);
  // Batch by batch: batch 2 updates and batch 3 finds unchanged the key batch 1 inserted.
  for (const std::string& line : batch_lines("p", real_summary.at("run_id").to_number<std::int64_t>())) {
    EXPECT_THAT(dry.err, HasSubstr(line));
  }

  // A replay over the stored rows: every record finds what the real run stored.
  const auto after_real = every_table(db_);
  const boost::json::object replay = summary(tidemark(config, {"run", "--pipeline", "p", "--dry-run", "--replay", "--json"}));
  EXPECT_EQ(every_table(db_), after_real);
  EXPECT_EQ(replay.at("inserted").to_number<std::int64_t>(), 0);
  EXPECT_EQ(counts(replay), counts(summary(tidemark(config, {"run", "--pipeline", "p", "--replay", "--json"}))));
}

TEST_F(DryRun, TextSummarySaysNothingWasWritten) {
  const auto input = dir_.write("in.csv",
                                "transaction_id,source_revision,amount,account_id,occurred_at\n"
                                "a,1,1.00,,\n");
  const std::string config =
      "pipelines:\n  p:\n    source: {kind: file, path: " + input.string() + ", format: csv}\n" + destination();
  const ProcessResult result = tidemark(config, {"run", "--pipeline", "p", "--dry-run"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("pipeline p, dry run (rolled back, nothing written): 1 batch, 1 record"));
  EXPECT_THAT(result.out, HasSubstr("  inserted: 1"));
  EXPECT_THAT(result.out, HasSubstr("(not stored: a dry run)"));
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM transaction_state"), "0");
}

// The threshold applies as in a run: the dry run fails where the run would, and leaves nothing.
// Its message says so: it committed no batch, so it names the batch a run would roll back and
// the checkpoint a run would keep, not "after the last committed batch".
TEST_F(DryRun, MaxRejectedFailsTheDryRunAsTheRunAndWritesNothing) {
  const auto input = dir_.write("in.csv",
                                "transaction_id,source_revision,amount,account_id,occurred_at\n"
                                "a,1,1.00,,\n"
                                "b,1,NaN,,\n");
  const std::string config = "pipelines:\n  p:\n    source: {kind: file, path: " + input.string() +
                             ", format: csv}\n    batch_size: 1\n" + destination();
  const auto before = every_table(db_);
  const ProcessResult dry = tidemark(config, {"run", "--pipeline", "p", "--dry-run", "--max-rejected", "0"});
  EXPECT_EQ(dry.exit_code, 1) << dry.err;
  EXPECT_THAT(dry.err, HasSubstr("pipeline p: dry run stopped at batch 2: the run's rejected records (1 invalid + 0 "
                                 "conflict = 1 of 2 input) exceed max_rejected 0; a run would roll batch 2 back"));
  EXPECT_THAT(dry.err, HasSubstr("; nothing was written"));
  EXPECT_THAT(dry.err, ::testing::Not(HasSubstr("committed"))) << dry.err;
  EXPECT_EQ(every_table(db_), before);
  const ProcessResult real = tidemark(config, {"run", "--pipeline", "p", "--max-rejected", "0"});
  EXPECT_EQ(real.exit_code, 1) << real.err;
  const std::string checkpoint = db_.scalar("SELECT position FROM checkpoint WHERE pipeline = 'p'");
  EXPECT_THAT(real.err, HasSubstr("pipeline p: batch 2 rolled back: the run's rejected records (1 invalid + 0 conflict "
                                  "= 1 of 2 input) exceed max_rejected 0; the checkpoint stays at " +
                                  checkpoint + ", after the last committed batch"));
  // The checkpoint the dry run said a run would keep is the one the run kept.
  EXPECT_THAT(dry.err, HasSubstr("its checkpoint staying at " + checkpoint + "; nothing was written"));
}

// A declared entity whose table does not exist yet: its batches meet an empty table created
// in the dry run's transaction, so every outcome is a real first run's, and no table is left.
TEST_F(DryRun, DeclaredEntityWithoutATableReportsTheFirstRunAndCreatesNothing) {
  const auto first = dir_.write("first.csv",
                                "item_id,version,name\n"
                                "i1,1,a\n"
                                "i2,1,x\n"   // batch 1: inserted, inserted
                                "i1,2,b\n"
                                "i2,1,x\n"   // batch 2: updated, unchanged (batch 1's rows)
                                "i1,2,c\n"
                                "i3,zz,q\n");  // batch 3: conflict (batch 2's i1,2), invalid
  const auto second = dir_.write("second.csv",
                                 "item_id,version,name\n"
                                 "i1,3,d\n"
                                 "i2,1,y\n"
                                 "i4,1,n\n");
  const auto config = [&](const std::filesystem::path& source) {
    return "entities:\n  items:\n    key: item_id\n    revision: version\n    fields:\n"
           "      name: {type: text}\n"
           "pipelines:\n  items_load:\n    entity: items\n    source: {kind: file, path: " +
           source.string() + ", format: csv}\n    batch_size: 2\n" + destination();
  };
  const auto before = every_table(db_);
  const ProcessResult dry = tidemark(config(first), {"run", "--pipeline", "items_load", "--dry-run", "--json"});
  const boost::json::object dry_summary = summary(dry);
  EXPECT_EQ(db_.scalar("SELECT to_regclass('items') IS NULL"), "t") << "the dry run left the table";
  EXPECT_EQ(every_table(db_), before);
  EXPECT_THAT(dry.err, HasSubstr("does not exist yet"));

  const boost::json::object real_summary =
      summary(tidemark(config(first), {"run", "--pipeline", "items_load", "--json"}));
  EXPECT_EQ(counts(dry_summary), counts(real_summary));
  EXPECT_EQ(real_summary.at("inserted").to_number<std::int64_t>(), 2);
  EXPECT_EQ(real_summary.at("updated").to_number<std::int64_t>(), 1);
  EXPECT_EQ(real_summary.at("conflict").to_number<std::int64_t>(), 1);

  // Now against the stored table: updated, conflict (i2,1 with another name), inserted.
  const auto stored = every_table(db_, {"items"});
  const boost::json::object dry_second =
      summary(tidemark(config(second), {"run", "--pipeline", "items_load", "--dry-run", "--json"}));
  EXPECT_EQ(every_table(db_, {"items"}), stored);
  EXPECT_EQ(counts(dry_second), counts(summary(tidemark(config(second), {"run", "--pipeline", "items_load", "--json"}))));
  EXPECT_EQ(dry_second.at("conflict").to_number<std::int64_t>(), 1);
}

// A table that lacks a column the declaration adds is refused: adding it would lock the
// table against its readers until the dry run ends.
TEST_F(DryRun, DeclaredEntityWhoseTableLacksAColumnIsRefusedAndUnchanged) {
  const auto input = dir_.write("in.csv", "item_id,version,name\ni1,1,a\n");
  const std::string fields = "      name: {type: text}\n";
  const auto config = [&](const std::string& more) {
    return "entities:\n  items:\n    key: item_id\n    revision: version\n    fields:\n" + fields + more +
           "pipelines:\n  items_load:\n    entity: items\n    source: {kind: file, path: " + input.string() +
           ", format: csv}\n" + destination();
  };
  summary(tidemark(config(""), {"run", "--pipeline", "items_load", "--json"}));
  const auto before = every_table(db_, {"items"});
  const ProcessResult refused =
      tidemark(config("      size: {type: integer}\n"), {"run", "--pipeline", "items_load", "--dry-run"});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("lacks the column(s) size"));
  EXPECT_THAT(refused.err, HasSubstr("a dry run does not alter a table"));
  EXPECT_EQ(every_table(db_, {"items"}), before);
}

TEST_F(DryRun, TakesThePipelineLockLikeARun) {
  const auto input = dir_.write("in.csv", "transaction_id,source_revision,amount,account_id,occurred_at\na,1,1.00,,\n");
  const std::string config =
      "pipelines:\n  p:\n    source: {kind: file, path: " + input.string() + ", format: csv}\n" + destination();
  pqxx::connection holder(db_.url());
  pqxx::nontransaction(holder).exec("SELECT pg_advisory_lock(hashtextextended('tidemark pipeline p', 0))");
  const ProcessResult busy = tidemark(config, {"run", "--pipeline", "p", "--dry-run"});
  EXPECT_NE(busy.exit_code, 0);
  EXPECT_THAT(busy.err, HasSubstr("pipeline 'p' is already running"));
}

TEST(DryRunCli, HelpDescribesItAndMetricsFileIsRefusedWithIt) {
  const ProcessResult help = run_tidemark({"run", "--help"});
  ASSERT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("--dry-run"));
  EXPECT_THAT(help.out, HasSubstr("rolled back"));
  const ProcessResult both = run_tidemark(
      {"run", "--pipeline", "p", "--source", "in.csv", "--dry-run", "--metrics-file", "/tmp/never-written.prom"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.err, HasSubstr("excludes"));
  EXPECT_FALSE(std::filesystem::exists("/tmp/never-written.prom"));
}

}  // namespace
}  // namespace tidemark
