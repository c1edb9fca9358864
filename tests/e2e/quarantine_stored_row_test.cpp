// `quarantine show` and GET /v1/quarantine/{id} beside the stored row, and
// a release refused when the entry's entity is not the one its pipeline loads now (issue
// 14): real tidemark processes against a throwaway PostgreSQL, with the entity_run_test
// setup (a config written per test, run, then the quarantine commands).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "tests/support/http_client.hpp"
#include "tests/support/process.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark {
namespace {

using testing::Process;
using testing::ProcessOptions;
using testing::ProcessResult;
using testing::Rows;
using testing::TempDir;
using testing::TestDatabase;
using testing::query_rows;
using testing::run_tidemark;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

// t1 stored at revision 1 with 10.50; the same revision with another amount conflicts with
// it; t9 has a valid key and a bad amount (nothing stored for it); the last row has no key.
constexpr char kTransactions[] =
    "transaction_id,source_revision,amount,account_id,occurred_at\n"
    "t1,1,10.50,acct-1,2024-05-01T10:00:00Z\n"
    "t1,1,99.00,acct-1,2024-05-01T10:00:00Z\n"
    "t9,1,NaN,acct-9,\n"
    ",1,1.00,acct-1,\n";

// An orders entity; `entity_line` chooses what pipeline p loads ("" for the built-in one).
// Batches of one record: a later record conflicts with the row an earlier batch stored.
std::string config_text(const std::filesystem::path& source, const std::string& entity_line) {
  return "entities:\n"
         "  orders:\n"
         "    key: order_id\n"
         "    revision: version\n"
         "    fields:\n"
         "      amount: {type: decimal, precision: 14, scale: 4, required: true}\n"
         "      note:   {type: text}\n"
         "pipelines:\n"
         "  p:\n" +
         entity_line + "    source: {kind: file, path: " + source.string() + ", format: csv}\n    batch_size: 1\n";
}

class QuarantineStoredRow : public ::testing::Test {
 protected:
  ProcessResult tidemark(std::vector<std::string> args, const std::string& config = "") {
    if (!config.empty()) args.insert(args.end(), {"--config", dir_.write("config.yaml", config).string()});
    args.insert(args.end(), {"--database", db_.url()});
    return run_tidemark(args);
  }
  // The id of the entry whose claimed key is `key` (NULL for "").
  std::string entry_of(const std::string& key) {
    const std::string where = key.empty() ? "transaction_id IS NULL" : "transaction_id = '" + key + "'";
    return db_.scalar("SELECT id FROM quarantine WHERE " + where);
  }
  void load_transactions() {
    const auto result = tidemark({"run", "--pipeline", "p"}, config_text(dir_.write("in.csv", kTransactions), ""));
    ASSERT_EQ(result.exit_code, 0) << result.both();
    ASSERT_EQ(db_.scalar("SELECT count(*) FROM quarantine"), "3");
  }
  // An orders conflict: o1 stored at version 2, the same version with another amount quarantined.
  void load_orders() {
    const auto input = dir_.write("orders.csv",
                                  "order_id,version,amount,note\n"
                                  "o1,2,1.5,first\n"
                                  "o1,2,7,second\n");
    const auto result = tidemark({"run", "--pipeline", "p"}, config_text(input, "    entity: orders\n"));
    ASSERT_EQ(result.exit_code, 0) << result.both();
    ASSERT_EQ(db_.scalar("SELECT entity || ':' || reason FROM quarantine"), "orders:conflict");
  }
  // serve on `config`, up once GET /healthz answers; the API needs no token on loopback.
  std::unique_ptr<Process> serve(const std::string& config, unsigned short port) {
    ProcessOptions options;
    options.env = {{"TIDEMARK_DATABASE_URL", db_.url()}, {"TIDEMARK_API_TOKEN", std::nullopt}};
    auto process = testing::start_tidemark(
        {"serve", "--config", dir_.write("serve.yaml", config).string(), "--listen", "127.0.0.1:" + std::to_string(port)},
        options);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (testing::http_request(port, "GET", "/healthz", {}, "", 1s).status != 200) {
      if (!process->running() || std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "serve did not come up: " << process->wait().err;
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
    return process;
  }

  TestDatabase db_;
  TempDir dir_;
};

TEST_F(QuarantineStoredRow, ShowPrintsTheStoredRowOfTheConflictingKey) {
  load_transactions();
  const auto shown = tidemark({"quarantine", "show", entry_of("t1")});
  ASSERT_EQ(shown.exit_code, 0) << shown.both();
  EXPECT_THAT(shown.out, HasSubstr("entity: transaction\n"));
  EXPECT_THAT(shown.out, HasSubstr("key: t1\nrevision: 1\n"));  // entity-neutral names
  EXPECT_THAT(shown.out, Not(HasSubstr("transaction_id: t1\nsource_revision")));
  EXPECT_THAT(shown.out, HasSubstr("raw: t1,1,99.00,acct-1,2024-05-01T10:00:00Z\n"));
  EXPECT_THAT(shown.out, HasSubstr("stored row (transaction_state):\n"
                                   "  transaction_id: t1\n"
                                   "  source_revision: 1\n"
                                   "  amount: 10.50\n"
                                   "  account_id: acct-1\n"
                                   "  occurred_at: 2024-05-01T10:00:00"));
}

// `quarantine list` prints a header and a tab-separated line per entry, its absent values as
// '-', and with --all the release outcome as one more column.
TEST_F(QuarantineStoredRow, ListPrintsATabSeparatedLinePerEntry) {
  load_transactions();
  const auto fields = [](const std::string& line) {
    std::vector<std::string> out(1);
    for (const char c : line) {
      if (c == '\t') out.emplace_back();
      else out.back() += c;
    }
    return out;
  };
  const auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    std::string line;
    for (const char c : text) {
      if (c != '\n') line += c;
      else out.push_back(std::exchange(line, ""));
    }
    return out;
  };
  const auto listed = tidemark({"quarantine", "list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.both();
  const auto open = lines(listed.out);
  ASSERT_EQ(open.size(), 4u) << listed.out;
  EXPECT_EQ(open[0], "id\tpipeline\treason\tkey\trevision\tposition\tdetail");
  const auto t9 = fields(open[2]);
  ASSERT_EQ(t9.size(), 7u) << open[2];
  EXPECT_EQ(t9[0], entry_of("t9"));
  EXPECT_EQ(t9[1], "p");
  EXPECT_EQ(t9[2], "invalid");
  EXPECT_EQ(t9[3], "t9");
  EXPECT_EQ(t9[4], "1");
  EXPECT_FALSE(t9[5].empty());
  EXPECT_FALSE(t9[6].empty());
  const auto keyless = fields(open[3]);
  ASSERT_EQ(keyless.size(), 7u) << open[3];
  EXPECT_EQ(keyless[3], "-");
  EXPECT_THAT(listed.err, HasSubstr("3 record(s)"));

  const auto all = tidemark({"quarantine", "list", "--all"});
  ASSERT_EQ(all.exit_code, 0) << all.both();
  const auto every = lines(all.out);
  ASSERT_EQ(every.size(), 4u) << all.out;
  EXPECT_EQ(every[0], "id\tpipeline\treason\tkey\trevision\tposition\tdetail\treleased_as");
  EXPECT_EQ(fields(every[1]).size(), 8u) << every[1];
}

TEST_F(QuarantineStoredRow, ShowSaysWhenNoRowIsStoredOrTheRecordHasNoKey) {
  load_transactions();
  const auto unstored = tidemark({"quarantine", "show", entry_of("t9")});
  ASSERT_EQ(unstored.exit_code, 0) << unstored.both();
  EXPECT_THAT(unstored.out, HasSubstr("stored row: none (transaction_state stores no row for key t9)\n"));
  const auto keyless = tidemark({"quarantine", "show", entry_of("")});
  ASSERT_EQ(keyless.exit_code, 0) << keyless.both();
  EXPECT_THAT(keyless.out, HasSubstr("stored row: - (the record has no valid key)\n"));
}

TEST_F(QuarantineStoredRow, ShowReadsADeclaredEntitysTableByTheConfig) {
  load_orders();
  const std::string id = db_.scalar("SELECT id FROM quarantine");
  const auto config = config_text(dir_.path() / "orders.csv", "    entity: orders\n");
  const auto shown = tidemark({"quarantine", "show", id}, config);
  ASSERT_EQ(shown.exit_code, 0) << shown.both();
  EXPECT_THAT(shown.out, HasSubstr("key: o1\nrevision: 2\n"));
  EXPECT_THAT(shown.out, Not(HasSubstr("transaction_id")));
  const auto listed = tidemark({"quarantine", "list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.both();
  EXPECT_THAT(listed.out, HasSubstr("\tkey\trevision\t"));
  EXPECT_THAT(listed.out, Not(HasSubstr("transaction_id")));
  EXPECT_THAT(shown.out, HasSubstr("stored row (orders):\n"
                                   "  order_id: o1\n"
                                   "  version: 2\n"
                                   "  amount: 1.5000\n"
                                   "  note: first\n"));
  // Without the config, the declaration recorded when the table was made reads it
  // (before, only the built-in entity was known).
  const auto bare = tidemark({"quarantine", "show", id});
  ASSERT_EQ(bare.exit_code, 0) << bare.both();
  EXPECT_THAT(bare.out, HasSubstr("stored row (orders):\n"
                                  "  order_id: o1\n"
                                  "  version: 2\n"
                                  "  amount: 1.5000\n"
                                  "  note: first\n"));
}

TEST_F(QuarantineStoredRow, ApiShowAnswersTheStoredRowBesideTheEntry) {
  load_transactions();
  const unsigned short port = testing::free_port();
  auto process = serve(config_text(dir_.path() / "in.csv", ""), port);
  const auto conflict = testing::http_request(port, "GET", "/v1/quarantine/" + entry_of("t1"));
  const auto unstored = testing::http_request(port, "GET", "/v1/quarantine/" + entry_of("t9"));
  const auto keyless = testing::http_request(port, "GET", "/v1/quarantine/" + entry_of(""));
  process->kill(SIGTERM);
  process->wait();

  ASSERT_EQ(conflict.status, 200) << conflict.body;
  const boost::json::value entry = boost::json::parse(conflict.body);
  EXPECT_EQ(entry.at("entity"), "transaction");
  EXPECT_EQ(entry.at("transaction_id"), "t1");
  EXPECT_EQ(entry.at("stored").at("table"), "transaction_state") << conflict.body;
  const auto& row = entry.at("stored").at("row");
  EXPECT_EQ(row.at("transaction_id"), "t1") << conflict.body;
  EXPECT_EQ(row.at("source_revision"), 1) << conflict.body;
  EXPECT_EQ(row.at("amount"), "10.50") << conflict.body;  // a string at its scale, as payloads carry it
  EXPECT_EQ(row.at("account_id"), "acct-1") << conflict.body;
  EXPECT_THAT(std::string(row.at("occurred_at").as_string()), HasSubstr("2024-05-01T10:00:00")) << conflict.body;
  // The stored revision under one name for every entity: the entry's own, so a release conflicts again.
  EXPECT_EQ(entry.at("stored").at("revision"), 1) << conflict.body;

  ASSERT_EQ(unstored.status, 200) << unstored.body;
  const boost::json::value none = boost::json::parse(unstored.body);
  EXPECT_EQ(none.at("stored").at("table"), "transaction_state") << unstored.body;
  EXPECT_TRUE(none.at("stored").at("row").is_null()) << unstored.body;
  EXPECT_TRUE(none.at("stored").at("revision").is_null()) << unstored.body;
  ASSERT_EQ(keyless.status, 200) << keyless.body;
  EXPECT_TRUE(boost::json::parse(keyless.body).at("stored").is_null()) << keyless.body;
}

// The pipeline loaded orders when the entry was quarantined and its config names the built-in
// entity now: validating the record as a transaction would load an order into
// transaction_state. The pipeline still loads orders, so that is what the
// refusal says; once its entity was changed on purpose, the entry is still an order's.
TEST_F(QuarantineStoredRow, ReleaseOfAnEntryOfAnotherEntityIsRefusedWithExit2) {
  load_orders();
  const std::string id = db_.scalar("SELECT id FROM quarantine");
  const auto untouched = [&] {
    EXPECT_EQ(db_.scalar("SELECT released_at IS NULL FROM quarantine"), "t");
    EXPECT_EQ(db_.scalar("SELECT count(*) FROM runs WHERE reason LIKE 'quarantine release%'"), "0");
    EXPECT_EQ(
        db_.scalar("SELECT to_regclass('transaction_state') IS NULL OR (SELECT count(*) = 0 FROM transaction_state)"),
        "t");
  };
  const std::string transactions = config_text(dir_.path() / "orders.csv", "");
  const auto refused = tidemark({"quarantine", "release", id}, transactions);
  EXPECT_EQ(refused.exit_code, 2) << refused.both();
  EXPECT_THAT(refused.err, HasSubstr("pipeline p loads entity 'orders' (recorded at its first run), not "
                                     "'transaction'"));
  untouched();

  const auto changed = tidemark({"pipeline", "set-entity", "--pipeline", "p", "--entity", "transaction"}, transactions);
  ASSERT_EQ(changed.exit_code, 0) << changed.both();
  const auto still_refused = tidemark({"quarantine", "release", id}, transactions);
  EXPECT_EQ(still_refused.exit_code, 2) << still_refused.both();
  EXPECT_THAT(still_refused.err, HasSubstr("quarantine entry " + id + " holds a record of entity 'orders', but "
                                           "pipeline p loads entity 'transaction' now: it is not released"));
  untouched();

  // With the pipeline loading orders again, and the config that says so, the entry is released.
  const std::string orders = config_text(dir_.path() / "orders.csv", "    entity: orders\n");
  ASSERT_EQ(tidemark({"pipeline", "set-entity", "--pipeline", "p", "--entity", "orders"}, orders).exit_code, 0);
  const auto released = tidemark({"quarantine", "release", id}, orders);
  EXPECT_EQ(released.exit_code, 0) << released.both();
  EXPECT_THAT(released.out, Not(HasSubstr("not released")));
  EXPECT_EQ(db_.scalar("SELECT released_at IS NOT NULL FROM quarantine WHERE id = " + id), "t");
}

// Serve's config names the built-in entity for p, which loads orders: 409, with the reason.
TEST_F(QuarantineStoredRow, ApiReleaseOfAnEntryOfAnotherEntityIs409WithTheReason) {
  load_orders();
  const std::string id = db_.scalar("SELECT id FROM quarantine");
  const unsigned short port = testing::free_port();
  auto process = serve(config_text(dir_.path() / "orders.csv", ""), port);
  const auto answer = testing::http_request(port, "POST", "/v1/quarantine/" + id + "/release");
  process->kill(SIGTERM);
  process->wait();

  EXPECT_EQ(answer.status, 409) << answer.body;
  const boost::json::value error = boost::json::parse(answer.body);
  EXPECT_THAT(std::string(error.at("error").as_string()),
              HasSubstr("pipeline p loads entity 'orders' (recorded at its first run), not 'transaction'"))
      << answer.body;
  EXPECT_EQ(db_.scalar("SELECT released_at IS NULL FROM quarantine"), "t");
}

}  // namespace
}  // namespace tidemark
