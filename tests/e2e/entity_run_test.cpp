// `tidemark run` on a declared entity (docs/entities.md): real tidemark
// processes against a throwaway PostgreSQL. A pipeline with `entity: orders` loads the orders
// table, typed, with every outcome, conflict and invalid-field quarantine naming the entity and
// the field, outbox rows keyed <destination>:<entity>:<key>:<revision> with the entity payload
// (previous included), an idempotent replay, and schema changes on the next run.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
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
using testing::TempDir;
using testing::TestDatabase;
using testing::query_rows;
using testing::run_tidemark;

constexpr char kSecretEnv[] = "TIDEMARK_ENTITY_TEST_SECRET";

// The orders entity with every field type; `extra` is how its extra_fields line reads and
// `more` adds field lines.
std::string orders_config(const std::filesystem::path& source, const std::string& format,
                          const std::string& amount_type = "{type: decimal, precision: 14, scale: 4, required: true}",
                          const std::string& more = "", const std::string& extra = "keep") {
  return "entities:\n"
         "  orders:\n"
         "    key: order_id\n"
         "    revision: version\n"
         "    partition_by: customer_id\n"
         "    extra_fields: " +
         extra +
         "\n"
         "    fields:\n"
         "      customer_id: {type: text, required: true, max_length: 64}\n"
         "      amount:      " +
         amount_type +
         "\n"
         "      placed_at:   {type: timestamp}\n"
         "      quantity:    {type: integer}\n"
         "      paid:        {type: boolean}\n"
         "      ship_date:   {type: date}\n"
         "      meta:        {type: json}\n" +
         more +
         "pipelines:\n"
         "  orders_daily:\n"
         "    entity: orders\n"
         "    source: {kind: file, path: " +
         source.string() + ", format: " + format +
         "}\n"
         "    destinations:\n"
         "      - {name: ledger, kind: http, url: http://127.0.0.1:9/hook, secret_env: " +
         kSecretEnv + "}\n";
}

class EntityRun : public ::testing::Test {
 protected:
  ProcessResult tidemark(const std::string& config_text, std::vector<std::string> args) {
    const auto config = dir_.write("config.yaml", config_text);
    args.insert(args.end(), {"--config", config.string(), "--database", db_.url()});
    ProcessOptions options;
    options.env[kSecretEnv] = "whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ=";
    return run_tidemark(args, options);
  }
  // One run of the orders pipeline; its summary line of counts.
  ProcessResult run(const std::string& config_text, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"run", "--pipeline", "orders_daily", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return tidemark(config_text, args);
  }
  Rows rows(const std::string& sql) { return query_rows(db_, sql); }

  TestDatabase db_;
  TempDir dir_;
};

// docs/entities.md: serve brings the declared entities' tables up to date when it starts, so
// a table that cannot hold its declaration stops it there (exit 2, naming the column), not each
// of its runs later.
TEST_F(EntityRun, ServeStartsOnlyWhenEveryEntityTableCanHoldItsDeclaration) {
  const auto input = dir_.write("orders.csv", "order_id,version,customer_id,amount\no1,1,c1,1\n");
  ASSERT_EQ(run(orders_config(input, "csv")).exit_code, 0);
  const auto config = dir_.write(
      "serve.yaml", orders_config(input, "csv", "{type: decimal, precision: 12, scale: 2, required: true}"));
  ProcessOptions options;
  options.env[kSecretEnv] = "whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ=";
  options.timeout = std::chrono::seconds(60);  // a serve that started would run until killed
  const ProcessResult serve =
      run_tidemark({"serve", "--config", config.string(), "--database", db_.url(), "--listen", "127.0.0.1:0"}, options);
  EXPECT_FALSE(serve.timed_out) << serve.both();
  EXPECT_EQ(serve.exit_code, 2) << serve.both();
  EXPECT_NE(serve.err.find("table orders, column amount: is numeric(14,4), the config says decimal(12,2)"),
            std::string::npos)
      << serve.both();
}

// "inserted":3 and so on from the --json summary.
std::string count_in(const std::string& json, const std::string& outcome) {
  const std::string key = "\"" + outcome + "\":";
  const auto at = json.find(key);
  if (at == std::string::npos) return "<none>";
  const auto end = json.find_first_of(",}", at);
  return json.substr(at + key.size(), end - at - key.size());
}

TEST_F(EntityRun, ACsvFileLoadsTheEntityTableTypedWithEveryOutcomeQuarantineAndOutbox) {
  const auto input = dir_.write(
      "orders.csv",
      "order_id,version,customer_id,amount,placed_at,quantity,paid,ship_date,meta,channel\n"
      "o1,1,c1,1.5,2024-05-01T10:00:00+02:00,007,true,2024-02-29,\"{\"\"b\"\":1,\"\"a\"\":[1e2]}\",web\n"
      "o2,1,c1,2,,,,,,\n"
      "o2,2,c1,2.25,,,false,,,\n"
      "o3,1,c2,3,,,,,,\n"
      "o3,1,c2,3.0000,,,,,,\n"
      "o4,1,c3,4,,,,,,\n"
      "o4,1,c3,5,,,,,,\n"
      "o5,1,c4,1.23456,,,,,,\n"
      "o6,1,c4,6,,,,2023-02-29,,\n"
      ",1,c4,6,,,,,,\n");
  const std::string config = orders_config(input, "csv");
  const auto first = run(config);
  ASSERT_EQ(first.exit_code, 0) << first.both();
  EXPECT_EQ(count_in(first.out, "inserted"), "3") << first.out;    // o1, o2 r2, o3
  EXPECT_EQ(count_in(first.out, "superseded"), "1") << first.out;  // o2 r1
  EXPECT_EQ(count_in(first.out, "duplicate"), "1") << first.out;   // o3 again, 3 = 3.0000
  EXPECT_EQ(count_in(first.out, "conflict"), "2") << first.out;    // o4 r1 twice, two payloads
  EXPECT_EQ(count_in(first.out, "invalid"), "3") << first.out;     // o5 amount, o6 ship_date, no key

  // Typed columns, canonical values, the undeclared column kept in `extra`.
  EXPECT_EQ(rows("SELECT order_id, version, customer_id, amount::text, "
                 "to_char(placed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS'), quantity, paid, ship_date::text, "
                 "meta::text, extra::text, tidemark_pipeline FROM orders ORDER BY order_id"),
            (Rows{{"o1", "1", "c1", "1.5000", "2024-05-01T08:00:00", "7", "t", "2024-02-29", R"({"a": [100], "b": 1})",
                   R"({"channel": "web"})", "orders_daily"},
                  {"o2", "2", "c1", "2.2500", "<null>", "<null>", "f", "<null>", "<null>", "<null>", "orders_daily"},
                  {"o3", "1", "c2", "3.0000", "<null>", "<null>", "<null>", "<null>", "<null>", "<null>",
                   "orders_daily"}}));
  EXPECT_EQ(rows("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'orders'::regclass "
                 "AND attname IN ('amount', 'placed_at', 'quantity', 'paid', 'ship_date', 'meta') ORDER BY attnum"),
            (Rows{{"numeric(14,4)"}, {"timestamp with time zone"}, {"bigint"}, {"boolean"}, {"date"}, {"jsonb"}}));

  // Quarantine: the entity, the claimed key and the revision (when valid), the field at fault.
  EXPECT_EQ(rows("SELECT entity, reason, transaction_id, source_revision, field, detail FROM quarantine ORDER BY id"),
            (Rows{{"orders", "conflict", "o4", "1", "<null>",
                   "order_id o4 revision 1 differs from the record at orders.csv:8 (byte 262) of the same revision: "
                   "amount \"4.0000\" here, \"5.0000\" there"},
                  {"orders", "conflict", "o4", "1", "<null>",
                   "order_id o4 revision 1 differs from the record at orders.csv:7 (byte 246) of the same revision: "
                   "amount \"5.0000\" here, \"4.0000\" there"},
                  {"orders", "invalid", "o5", "1", "amount", "amount: more than 4 fraction digits in \"1.23456\""},
                  {"orders", "invalid", "o6", "1", "ship_date", "ship_date: day out of range in \"2023-02-29\""},
                  {"orders", "invalid", "<null>", "1", "order_id", "order_id: missing"}}));

  // Outbox: <destination>:<entity>:<key>:<revision>, partitioned and numbered by customer.
  EXPECT_EQ(rows("SELECT idempotency_key, partition_key, sequence FROM outbox ORDER BY id"),
            (Rows{{"ledger:orders:o1:1", "c1", "1"}, {"ledger:orders:o2:2", "c1", "2"}, {"ledger:orders:o3:1", "c2", "1"}}));
  EXPECT_EQ(rows("SELECT payload::text FROM outbox WHERE idempotency_key = 'ledger:orders:o1:1'"),
            (Rows{{R"({"key": "o1", "entity": "orders", "fields": {"meta": {"a": [100], "b": 1}, "paid": true, )"
                   R"("extra": {"channel": "web"}, "amount": "1.5000", "quantity": 7, "placed_at": )"
                   R"("2024-05-01T08:00:00.000000Z", "ship_date": "2024-02-29", "customer_id": "c1"}, "event_id": )"
                   R"("ledger:orders:o1:1", "pipeline": "orders_daily", "previous": null, "revision": 1, "sequence": 1, )"
                   R"("partition": "c1"})"}}));

  // Second input: an update with previous, the same value spelt differently, and two
  // same-revision conflicts with the stored rows: o2 r2 with another amount, and o1 r1 whose
  // absent fields differ from the stored r1's (conflict wins over superseded).
  const auto second_input = dir_.write(
      "orders-2.csv",
      "order_id,version,customer_id,amount\n"
      "o1,2,c1,9.99\n"
      "o1,1,c1,1.5\n"
      "o3,1,c2,3.00\n"
      "o2,2,c1,7\n");
  const auto second = run(config, {"--source", second_input.string(), "--format", "csv"});
  ASSERT_EQ(second.exit_code, 0) << second.both();
  EXPECT_EQ(count_in(second.out, "updated"), "1") << second.out;
  EXPECT_EQ(count_in(second.out, "superseded"), "0") << second.out;
  EXPECT_EQ(count_in(second.out, "unchanged"), "1") << second.out;  // o3: 3.00 = 3.0000
  EXPECT_EQ(count_in(second.out, "conflict"), "2") << second.out;
  EXPECT_EQ(rows("SELECT payload->'previous'->>'revision', payload->'previous'->'fields'->>'amount', "
                 "payload->'fields'->>'amount', payload->'fields'->>'paid' FROM outbox "
                 "WHERE idempotency_key = 'ledger:orders:o1:2'"),
            (Rows{{"1", "1.5000", "9.9900", "<null>"}}));
  EXPECT_EQ(rows("SELECT partition_key, sequence FROM outbox WHERE idempotency_key = 'ledger:orders:o1:2'"),
            (Rows{{"c1", "3"}}));
  EXPECT_EQ(rows("SELECT transaction_id, source_revision FROM quarantine WHERE reason = 'conflict' AND entity = "
                 "'orders' ORDER BY id DESC LIMIT 1"),
            (Rows{{"o2", "2"}}));

  // Replaying the first input changes nothing: every accepted record is unchanged, stale,
  // superseded or a duplicate, and its rejected ones are quarantined already.
  const Rows table_before = rows("SELECT * FROM orders ORDER BY order_id");
  const Rows outbox_before = rows("SELECT id FROM outbox ORDER BY id");
  const Rows quarantine_before = rows("SELECT id FROM quarantine ORDER BY id");
  const auto replay = run(config, {"--replay"});
  ASSERT_EQ(replay.exit_code, 0) << replay.both();
  EXPECT_EQ(count_in(replay.out, "inserted"), "0") << replay.out;
  EXPECT_EQ(count_in(replay.out, "updated"), "0") << replay.out;
  EXPECT_EQ(count_in(replay.out, "unchanged"), "2") << replay.out;   // o2 r2, o3
  EXPECT_EQ(count_in(replay.out, "stale"), "1") << replay.out;       // o1 r1 (o1 is at r2)
  EXPECT_EQ(count_in(replay.out, "superseded"), "1") << replay.out;  // o2 r1
  EXPECT_EQ(count_in(replay.out, "duplicate"), "1") << replay.out;   // o3 again
  EXPECT_EQ(rows("SELECT * FROM orders ORDER BY order_id"), table_before);
  EXPECT_EQ(rows("SELECT id FROM outbox ORDER BY id"), outbox_before);
  EXPECT_EQ(rows("SELECT id FROM quarantine ORDER BY id"), quarantine_before);
  EXPECT_EQ(rows("SELECT unchanged, stale, inserted, updated FROM batch_ledger ORDER BY id DESC LIMIT 1"),
            (Rows{{"2", "1", "0", "0"}}));
}

TEST_F(EntityRun, JsonLinesDeliverEachJsonTypeAndAWrongTypeIsQuarantinedNamingTheField) {
  const auto input = dir_.write(
      "orders.jsonl",
      R"({"order_id":"j1","version":1,"customer_id":"c1","amount":12.5,"quantity":"42","paid":false,)"
      R"("placed_at":"2024-05-01T08:00:00Z","ship_date":"2024-05-02","meta":{"tags":["x",{"n":1.50}],"ok":true},"note":"hi"})"
      "\n"
      R"({"order_id":"j2","version":3,"customer_id":"c1","amount":"1","meta":[1,null],"paid":null})"
      "\n"
      R"({"order_id":"j3","version":1,"customer_id":"c2","amount":1,"paid":"true"})"
      "\n"
      R"({"order_id":"j4","version":1,"customer_id":"c2","amount":1,"quantity":1.5})"
      "\n"
      R"({"order_id":"j5","version":1,"amount":1})"
      "\n");
  const auto result = run(orders_config(input, "jsonl"));
  ASSERT_EQ(result.exit_code, 0) << result.both();
  EXPECT_EQ(count_in(result.out, "inserted"), "2") << result.out;
  EXPECT_EQ(count_in(result.out, "invalid"), "3") << result.out;
  EXPECT_EQ(rows("SELECT order_id, amount::text, quantity, paid, meta::text, extra::text FROM orders ORDER BY 1"),
            (Rows{{"j1", "12.5000", "42", "f", R"({"ok": true, "tags": ["x", {"n": 1.50}]})", R"({"note": "hi"})"},
                  {"j2", "1.0000", "<null>", "<null>", "[1, null]", "<null>"}}));
  EXPECT_EQ(rows("SELECT transaction_id, field, detail FROM quarantine WHERE entity = 'orders' ORDER BY id"),
            (Rows{{"j3", "paid", "paid: must be a boolean, not the string \"true\""},
                  {"j4", "quantity", "quantity: not an integer (an optional '-', then decimal digits) in \"1.5\""},
                  {"j5", "customer_id", "customer_id: missing (required)"}}));
  EXPECT_EQ(rows("SELECT payload->'fields'->'quantity', payload->'fields'->'meta'->'tags'->1->'n' FROM outbox "
                 "WHERE idempotency_key = 'ledger:orders:j1:1'"),
            (Rows{{"42", "1.50"}}));
}

TEST_F(EntityRun, ExtraFieldsRejectMakesAnyUndeclaredValueInvalidAndAReleaseRevalidatesByTheCurrentDeclaration) {
  const auto input = dir_.write("orders.csv",
                                "order_id,version,customer_id,amount,channel\n"
                                "r1,1,c1,1,\n"
                                "r2,1,c1,1,web\n");
  const auto result = run(orders_config(input, "csv", "{type: decimal, precision: 14, scale: 4, required: true}", "",
                                        "reject"));
  ASSERT_EQ(result.exit_code, 0) << result.both();
  EXPECT_EQ(count_in(result.out, "inserted"), "1") << result.out;
  EXPECT_EQ(rows("SELECT transaction_id, field, detail FROM quarantine"),
            (Rows{{"r2", "channel", "channel: not a declared field (extra_fields: reject)"}}));

  // Declared with extra_fields: keep now, the released record is accepted into the entity's
  // table, its channel kept, and its outbox row written.
  const std::string id = rows("SELECT id FROM quarantine")[0][0];
  const auto release = tidemark(orders_config(input, "csv"), {"quarantine", "release", id});
  ASSERT_EQ(release.exit_code, 0) << release.both();
  EXPECT_NE(release.out.find("inserted"), std::string::npos) << release.out;
  EXPECT_EQ(rows("SELECT order_id, extra::text FROM orders ORDER BY 1"),
            (Rows{{"r1", "<null>"}, {"r2", R"({"channel": "web"})"}}));
  EXPECT_EQ(rows("SELECT released_at IS NOT NULL FROM quarantine"), (Rows{{"t"}}));
  EXPECT_EQ(rows("SELECT idempotency_key FROM outbox ORDER BY id"),
            (Rows{{"ledger:orders:r1:1"}, {"ledger:orders:r2:1"}}));
}

TEST_F(EntityRun, ANewFieldAddsAColumnOnTheNextRunAndAChangedTypeExits2) {
  const auto input = dir_.write("orders.csv", "order_id,version,customer_id,amount,gift\no1,1,c1,1,yes\n");
  const auto first = run(orders_config(input, "csv"));
  ASSERT_EQ(first.exit_code, 0) << first.both();
  EXPECT_EQ(rows("SELECT count(*) FROM pg_attribute WHERE attrelid = 'orders'::regclass AND attname = 'gift'"),
            (Rows{{"0"}}));

  dir_.write("orders.csv", "order_id,version,customer_id,amount,gift\no1,1,c1,1,yes\no1,2,c1,1,yes\n");
  const auto second = run(orders_config(input, "csv", "{type: decimal, precision: 14, scale: 4, required: true}",
                                        "      gift:        {type: text}\n"));
  ASSERT_EQ(second.exit_code, 0) << second.both();
  EXPECT_EQ(rows("SELECT order_id, version, gift FROM orders"), (Rows{{"o1", "2", "yes"}}));

  const auto changed = run(orders_config(input, "csv", "{type: decimal, precision: 12, scale: 2, required: true}"));
  EXPECT_EQ(changed.exit_code, 2) << changed.both();
  EXPECT_NE(changed.err.find("table orders, column amount: is numeric(14,4), the config says decimal(12,2)"),
            std::string::npos)
      << changed.both();
  EXPECT_EQ(rows("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'orders'::regclass "
                 "AND attname = 'amount'"),
            (Rows{{"numeric(14,4)"}}));
}

// A shipments entity as a newcomer declares it; each field's declaration on its own line
// (weight_kg on line 6, note on 7, pieces on 8), for `check` to name.
std::string shipments_config(const std::filesystem::path& source, const std::string& weight, const std::string& note,
                             const std::string& pieces) {
  return "entities:\n"
         "  shipments:\n"
         "    key: shipment_id\n"
         "    revision: version\n"
         "    fields:\n"
         "      weight_kg: " + weight + "\n"
         "      note: " + note + "\n"
         "      pieces: " + pieces + "\n"
         "pipelines:\n"
         "  shipments_daily:\n"
         "    entity: shipments\n"
         "    source: {kind: file, path: " + source.string() + ", format: csv}\n"
         "    destinations:\n"
         "      - {name: ledger, kind: http, url: http://127.0.0.1:9/hook, secret_env: " + kSecretEnv + "}\n";
}

const std::string kShipmentColumns =
    "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'shipments'::regclass "
    "AND attname IN ('weight_kg', 'note', 'pieces') ORDER BY attnum";

// docs/entities.md "Schema changes": a wider decimal, a larger max_length and an integer into
// a decimal wide enough are made by the next run, on a table that holds rows; the rows stay
// and the wider values load.
TEST_F(EntityRun, AWiderDecimalALargerMaxLengthAndAnIntegerIntoADecimalAreMadeByTheNextRunKeepingTheRows) {
  const auto input = dir_.write("shipments.csv", "shipment_id,version,weight_kg,note,pieces\ns1,1,12345.678,abcde,7\n");
  const auto narrow = shipments_config(input, "{type: decimal, precision: 8, scale: 3}",
                                       "{type: text, max_length: 5}", "{type: integer}");
  const auto first = tidemark(narrow, {"run", "--pipeline", "shipments_daily", "--json"});
  ASSERT_EQ(first.exit_code, 0) << first.both();

  dir_.write("shipments.csv",
             "shipment_id,version,weight_kg,note,pieces\ns1,1,12345.678,abcde,7\n"
             "s2,1,1234567.891,abcdefghij,1234567890123456789.25\n");
  const auto wide = shipments_config(input, "{type: decimal, precision: 10, scale: 3}",
                                     "{type: text, max_length: 10}", "{type: decimal, precision: 21, scale: 2}");
  // A dry run alters no table, and says that the real run will.
  const auto dry = tidemark(wide, {"run", "--pipeline", "shipments_daily", "--dry-run", "--json"});
  EXPECT_EQ(dry.exit_code, 2) << dry.both();
  EXPECT_NE(dry.err.find("table shipments has column(s) weight_kg (numeric(8,3) -> numeric(10,3)), pieces (bigint "
                         "-> numeric(21,2)) narrower than the declaration"),
            std::string::npos)
      << dry.both();
  // `check` says so too, at the field's line, and changes nothing either.
  const auto check = tidemark(wide, {"check"});
  EXPECT_EQ(check.exit_code, 0) << check.both();
  EXPECT_NE(check.err.find("note: " + (dir_.path() / "config.yaml").string() +
                           ":6: entity shipments: table shipments, column weight_kg is numeric(8,3); the next run (or "
                           "`tidemark migrate --config`) widens it to numeric(10,3) (more digits, the same scale: "
                           "every stored value fits as it is)"),
            std::string::npos)
      << check.both();
  EXPECT_EQ(rows(kShipmentColumns), (Rows{{"weight_kg", "numeric(8,3)"}, {"note", "text"}, {"pieces", "bigint"}}));

  const auto second = tidemark(wide, {"run", "--pipeline", "shipments_daily", "--json"});
  ASSERT_EQ(second.exit_code, 0) << second.both();
  EXPECT_NE(second.err.find("entity shipments: table shipments, column weight_kg: numeric(8,3) -> numeric(10,3) "
                            "(more digits, the same scale: every stored value fits as it is): ALTER TABLE "
                            "\"shipments\" ALTER COLUMN \"weight_kg\" TYPE numeric(10,3)"),
            std::string::npos)
      << second.both();
  EXPECT_NE(second.err.find("column pieces: bigint -> numeric(21,2)"), std::string::npos) << second.both();
  EXPECT_EQ(count_in(second.out, "inserted"), "1") << second.out;
  EXPECT_EQ(rows(kShipmentColumns),
            (Rows{{"weight_kg", "numeric(10,3)"}, {"note", "text"}, {"pieces", "numeric(21,2)"}}));
  EXPECT_EQ(rows("SELECT shipment_id, version, weight_kg::text, note, pieces::text FROM shipments ORDER BY 1"),
            (Rows{{"s1", "1", "12345.678", "abcde", "7.00"},
                  {"s2", "1", "1234567.891", "abcdefghij", "1234567890123456789.25"}}));
  EXPECT_EQ(rows("SELECT count(*) FROM quarantine"), (Rows{{"0"}}));
  EXPECT_EQ(rows("SELECT definition->'fields'->1->>'max_length' FROM tidemark_entities WHERE name = 'shipments'"),
            (Rows{{"10"}}));
}

// Narrowing and a decimal into an integer are refused, every mismatch in the one error with the
// statement to run by hand and why; `check` names the config line of each; the table is left
// as it was.
TEST_F(EntityRun, ANarrowingIsRefusedListingEveryMismatchWithItsStatementAndCheckNamesTheirLines) {
  const auto input = dir_.write("shipments.csv", "shipment_id,version,weight_kg,note,pieces\ns1,1,1234567.891,ab,7.5\n");
  const auto wide = shipments_config(input, "{type: decimal, precision: 10, scale: 3}",
                                     "{type: text, max_length: 10}", "{type: decimal, precision: 21, scale: 2}");
  const auto first = tidemark(wide, {"run", "--pipeline", "shipments_daily", "--json"});
  ASSERT_EQ(first.exit_code, 0) << first.both();

  const auto narrow = shipments_config(input, "{type: decimal, precision: 8, scale: 3}",
                                       "{type: text, max_length: 5}", "{type: integer}");
  const std::string weight_line =
      "table shipments, column weight_kg: is numeric(10,3), the config says decimal(8,3); Tidemark will not change "
      "it: fewer digits before the point (5, was 7): a stored value with more would make it fail; to change it by "
      "hand: ALTER TABLE \"shipments\" ALTER COLUMN \"weight_kg\" TYPE numeric(8,3)";
  const std::string pieces_line =
      "table shipments, column pieces: is numeric(21,2), the config says integer; Tidemark will not change it: a "
      "decimal into an integer: PostgreSQL would round every stored fraction to a whole number; to change it by "
      "hand: ALTER TABLE \"shipments\" ALTER COLUMN \"pieces\" TYPE bigint";
  const auto refused = tidemark(narrow, {"run", "--pipeline", "shipments_daily", "--json"});
  EXPECT_EQ(refused.exit_code, 2) << refused.both();
  // One mismatch a line in the error; the log writes a message of several lines on one,
  // joined by " | " (docs/operations.md "Logs").
  EXPECT_NE(refused.err.find(weight_line + " | " + pieces_line), std::string::npos) << refused.both();
  EXPECT_EQ(rows(kShipmentColumns),
            (Rows{{"weight_kg", "numeric(10,3)"}, {"note", "text"}, {"pieces", "numeric(21,2)"}}));
  EXPECT_EQ(rows("SELECT weight_kg::text, pieces::text FROM shipments"), (Rows{{"1234567.891", "7.50"}}));

  const auto check = tidemark(narrow, {"check"});
  EXPECT_EQ(check.exit_code, 2) << check.both();
  const std::string config = (dir_.path() / "config.yaml").string();
  EXPECT_NE(check.err.find("error: " + config + ":6: entity shipments: " + weight_line), std::string::npos)
      << check.both();
  EXPECT_NE(check.err.find("error: " + config + ":8: entity shipments: " + pieces_line), std::string::npos)
      << check.both();
}

}  // namespace
}  // namespace tidemark
