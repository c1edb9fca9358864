// A pipeline keeps its entity (docs/entities.md "A pipeline keeps its
// entity"): real tidemark processes against a throwaway PostgreSQL. Before, a command without
// --config treated every pipeline as the built-in `transaction` entity: it loaded a declared
// entity's files as transactions, released its entries as transactions and could not show
// their stored rows.
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

using testing::ProcessResult;
using testing::TempDir;
using testing::TestDatabase;
using testing::run_tidemark;
using ::testing::HasSubstr;
using ::testing::Not;

// Batches of one record: s1 is stored, then its twin of the same version conflicts with it;
// s2's weight is not a number.
constexpr char kShipments[] =
    "shipment_id,version,weight\n"
    "s1,1,2.50\n"
    "s1,1,3.00\n"
    "s2,1,heavy\n";

// Pipeline `shipments` loads `entity` ("shipment" declared here, or the built-in "transaction").
std::string config_text(const std::filesystem::path& source, const std::string& entity) {
  return "entities:\n"
         "  shipment:\n"
         "    table: shipments\n"
         "    key: shipment_id\n"
         "    revision: version\n"
         "    fields:\n"
         "      weight: {type: decimal, precision: 10, scale: 2, required: true}\n"
         "pipelines:\n"
         "  shipments:\n"
         "    entity: " + entity + "\n"
         "    source: {kind: file, path: " + source.string() + ", format: csv}\n"
         "    batch_size: 1\n";
}

class PipelineEntity : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.path() / "in");
    dir_.write("in/1.csv", kShipments);
  }
  // `args` with --database, and with --config when `entity` is not empty.
  ProcessResult tidemark(std::vector<std::string> args, const std::string& entity = "") {
    if (!entity.empty()) {
      args.insert(args.end(), {"--config", dir_.write("config.yaml", config_text(in(), entity)).string()});
    }
    args.insert(args.end(), {"--database", db_.url()});
    return run_tidemark(args);
  }
  std::filesystem::path in() const { return dir_.path() / "in"; }
  void first_run() {
    const auto result = tidemark({"run", "--pipeline", "shipments"}, "shipment");
    ASSERT_EQ(result.exit_code, 0) << result.both();
    ASSERT_EQ(db_.scalar("SELECT string_agg(reason, ',' ORDER BY id) FROM quarantine"), "conflict,invalid");
    ASSERT_EQ(db_.scalar("SELECT entity FROM tidemark_pipeline_entities WHERE pipeline = 'shipments'"), "shipment");
  }
  std::string entry(const std::string& reason) {
    return db_.scalar("SELECT id FROM quarantine WHERE reason = '" + reason + "' AND released_at IS NULL");
  }
  // Every table a refused command must leave as it was.
  std::string state() {
    return db_.scalar(
        "SELECT (SELECT count(*) FROM runs) || '/' || (SELECT count(*) FROM batch_ledger) || '/' || "
        "(SELECT count(*) FROM quarantine WHERE released_at IS NULL) || '/' || "
        "(SELECT count(*) FROM transaction_state) || '/' || (SELECT string_agg(position, ',') FROM checkpoint)");
  }

  TestDatabase db_;
  TempDir dir_;
};

TEST_F(PipelineEntity, ARunWithoutTheConfigIsRefusedWithExit2NamingThePipelinesEntity) {
  first_run();
  dir_.write("in/2.csv", "shipment_id,version,weight\ns3,1,1.25\n");
  const std::string before = state();
  const auto refused = tidemark({"run", "--pipeline", "shipments", "--source", in().string(), "--format", "csv"});
  EXPECT_EQ(refused.exit_code, 2) << refused.both();
  EXPECT_THAT(refused.err, HasSubstr("pipeline shipments loads entity 'shipment' (recorded at its first run), not "
                                     "'transaction'"));
  EXPECT_THAT(refused.err, HasSubstr("Pass the pipeline's --config"));
  EXPECT_EQ(state(), before);  // no run, nothing loaded as a transaction, the checkpoint where it was

  // With its config the same run loads the new file.
  const auto loaded = tidemark({"run", "--pipeline", "shipments"}, "shipment");
  EXPECT_EQ(loaded.exit_code, 0) << loaded.both();
  EXPECT_EQ(db_.scalar("SELECT weight FROM shipments WHERE shipment_id = 's3'"), "1.25");
}

TEST_F(PipelineEntity, ARunWhoseConfigNamesAnotherEntityIsRefusedAndADryRunToo) {
  first_run();
  for (const std::vector<std::string>& args : {std::vector<std::string>{"run", "--pipeline", "shipments"},
                                               std::vector<std::string>{"run", "--pipeline", "shipments", "--dry-run"}}) {
    const auto refused = tidemark(args, "transaction");
    EXPECT_EQ(refused.exit_code, 2) << refused.both();
    EXPECT_THAT(refused.err, HasSubstr("pipeline shipments loads entity 'shipment'"));
  }
}

TEST_F(PipelineEntity, AReleaseWithoutTheConfigIsRefusedWithExit2AndWithItReleases) {
  first_run();
  const std::string id = entry("invalid");
  const std::string before = state();
  const auto refused = tidemark({"quarantine", "release", id});
  EXPECT_EQ(refused.exit_code, 2) << refused.both();
  EXPECT_THAT(refused.err, HasSubstr("pipeline shipments loads entity 'shipment' (recorded at its first run)"));
  EXPECT_THAT(refused.err, Not(HasSubstr("loads entity 'transaction' now")));
  EXPECT_EQ(state(), before);

  const auto released = tidemark({"quarantine", "release", id}, "shipment");
  EXPECT_EQ(released.exit_code, 0) << released.both();
  EXPECT_THAT(released.out, HasSubstr(": invalid\n"));
}

TEST_F(PipelineEntity, ShowWithoutTheConfigReadsTheStoredRowByTheRecordedDeclaration) {
  first_run();
  const auto shown = tidemark({"quarantine", "show", entry("conflict")});
  ASSERT_EQ(shown.exit_code, 0) << shown.both();
  EXPECT_THAT(shown.out, HasSubstr("entity: shipment\n"));
  EXPECT_THAT(shown.out, HasSubstr("stored row (shipments):\n"
                                   "  shipment_id: s1\n"
                                   "  version: 1\n"
                                   "  weight: 2.50\n"));
}

TEST_F(PipelineEntity, SetEntityChangesThePipelinesEntityOnPurpose) {
  first_run();
  // An entity no config declares is not recorded.
  const auto unknown = tidemark({"pipeline", "set-entity", "--pipeline", "shipments", "--entity", "parcel"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.both();
  EXPECT_THAT(unknown.err, HasSubstr("entity 'parcel' is not the built-in one"));

  const auto changed = tidemark({"pipeline", "set-entity", "--pipeline", "shipments", "--entity", "transaction"});
  ASSERT_EQ(changed.exit_code, 0) << changed.both();
  EXPECT_THAT(changed.out, HasSubstr("pipeline shipments loads entity 'transaction' from now on (it loaded "
                                     "'shipment'"));
  EXPECT_EQ(db_.scalar("SELECT entity FROM tidemark_pipeline_entities WHERE pipeline = 'shipments'"), "transaction");

  // Now a run without the config loads transactions, and the shipment entries stay shipments'.
  dir_.write("in/2.csv", "transaction_id,source_revision,amount\nt1,1,5.00\n");
  const auto run = tidemark({"run", "--pipeline", "shipments", "--source", (in() / "2.csv").string()});
  EXPECT_EQ(run.exit_code, 0) << run.both();
  EXPECT_EQ(db_.scalar("SELECT amount FROM transaction_state WHERE transaction_id = 't1'"), "5.00");
  const auto release = tidemark({"quarantine", "release", entry("invalid")});
  EXPECT_EQ(release.exit_code, 2) << release.both();
  EXPECT_THAT(release.err, HasSubstr("holds a record of entity 'shipment', but pipeline shipments loads entity "
                                     "'transaction' now"));
}

}  // namespace
}  // namespace tidemark
