// The demo's declared entity (scripts/demo, docs/entities.md "Try it: the demo's orders"): the
// bundled examples/demo.yaml run as the demo runs it, from the source folder, against a
// throwaway database. Its orders pipeline loads examples/orders into the typed orders table,
// quarantines the invalid currency with its field and the same-revision pair as conflicts, and
// a replay changes nothing; its demo pipeline still loads the transactions as before.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/process.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark {
namespace {

using testing::ProcessOptions;
using testing::ProcessResult;
using testing::Rows;
using testing::TestDatabase;
using testing::query_rows;
using testing::run_tidemark;

class DemoOrders : public ::testing::Test {
 protected:
  // `tidemark run` of one pipeline of examples/demo.yaml, from the source folder, as the demo runs it.
  ProcessResult run(const std::string& pipeline, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"run",        "--pipeline", pipeline, "--config", "examples/demo.yaml",
                                     "--database", db_.url(),    "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessOptions options;
    options.working_directory = TIDEMARK_SOURCE_DIR;
    return run_tidemark(args, options);
  }
  Rows rows(const std::string& sql) { return query_rows(db_, sql); }

  TestDatabase db_;
};

// The --json summary's counts, without the run id and checkpoint.
std::string counts_of(const ProcessResult& result) {
  const std::string& out = result.out;
  const auto from = out.find("\"input\"");
  const auto to = out.find(",\"checkpoint\"");
  if (from == std::string::npos || to == std::string::npos) return "<no summary> " + out + result.err;
  return out.substr(from, to - from);
}

const char kOrders[] =
    "SELECT order_id, version, customer_id, currency, quantity, price::text, status, "
    "to_char(ordered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS'), tidemark_pipeline FROM orders ORDER BY 1";
const char kQuarantine[] =
    "SELECT entity, reason, transaction_id, source_revision, field, detail, position FROM quarantine ORDER BY id";

TEST_F(DemoOrders, TheExampleConfigLoadsTheOrdersTableQuarantinesWithEntityAndFieldAndAReplayChangesNothing) {
  const auto first = run("orders");
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_EQ(counts_of(first),
            R"("input":8,"inserted":3,"updated":0,"unchanged":0,"stale":1,"superseded":1,"duplicate":0,)"
            R"("invalid":1,"conflict":2)");
  const Rows orders = {
      {"O-1", "2", "C-1", "EUR", "3", "19.90", "paid", "2024-05-01T09:15:00", "orders"},
      {"O-2", "1", "C-2", "USD", "1", "250.00", "placed", "2024-05-01T09:20:00", "orders"},
      {"O-4", "1", "C-3", "GBP", "10", "4.25", "placed", "2024-05-02T08:00:00", "orders"},
  };
  EXPECT_EQ(rows(kOrders), orders);
  // Each conflict names the other record and the field that differs, with both values.
  const Rows quarantine = {
      {"orders", "invalid", "O-3", "1", "currency", "currency: more than 3 characters (4) in \"EURO\"",
       "2024-05-01.jsonl:3 (byte 305)"},
      {"orders", "conflict", "O-2", "2", "<null>",
       "order_id O-2 revision 2 differs from the record at 2024-05-02.jsonl:4 (byte 459) of the same revision: "
       "status \"shipped\" here, \"cancelled\" there",
       "2024-05-02.jsonl:3 (byte 301)"},
      {"orders", "conflict", "O-2", "2", "<null>",
       "order_id O-2 revision 2 differs from the record at 2024-05-02.jsonl:3 (byte 301) of the same revision: "
       "status \"cancelled\" here, \"shipped\" there",
       "2024-05-02.jsonl:4 (byte 459)"},
  };
  EXPECT_EQ(rows(kQuarantine), quarantine);
  // The demo's pipelines have no destinations.
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM outbox"), "0");

  const auto replay = run("orders", {"--replay"});
  ASSERT_EQ(replay.exit_code, 0) << replay.out << replay.err;
  EXPECT_EQ(counts_of(replay),
            R"("input":8,"inserted":0,"updated":0,"unchanged":3,"stale":1,"superseded":1,"duplicate":0,)"
            R"("invalid":1,"conflict":2)");
  EXPECT_EQ(rows(kOrders), orders);
  EXPECT_EQ(rows(kQuarantine), quarantine);

  // The same config's demo pipeline is the built-in entity's, into transaction_state.
  const auto transactions = run("demo");
  ASSERT_EQ(transactions.exit_code, 0) << transactions.out << transactions.err;
  EXPECT_EQ(rows("SELECT transaction_id, source_revision, amount::text FROM transaction_state ORDER BY 1"),
            (Rows{{"T-10", "3", "135.00"}, {"T-11", "1", "40.10"}, {"T-15", "1", "99.99"}, {"T-17", "1", "7.50"}}));
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM orders"), "3");
}

}  // namespace
}  // namespace tidemark
