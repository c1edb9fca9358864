// An entity's table against its declaration (pipeline/store/entity_schema.*):
// created and recorded, extended by a new field, widened where that loses nothing with its
// rows kept, refused on any other changed type, precision or scale with every mismatch and the
// statement to run by hand, a foreign table adopted only when it matches, and two processes at once.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

#include "pipeline/core/entity.hpp"
#include "pipeline/store/entity_schema.hpp"
#include "pipeline/store/migrate.hpp"
#include "sql/statements.hpp"
#include "tests/support/entity_fixtures.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::pipeline {
namespace {

using testing::query_rows;
using testing::Rows;
using testing::TestDatabase;

EntityDeclaration orders() {
  return testing::declare_entity("orders", {
                                               {.name = "amount", .type = FieldType::kDecimal, .required = true,
                                                .precision = 14, .scale = 4},
                                               {.name = "quantity", .type = FieldType::kInteger},
                                               {.name = "placed_at", .type = FieldType::kTimestamp},
                                           });
}

// The columns of an orders-shaped table: the key, the revision, `fields`, then Tidemark's
// bookkeeping columns; each as name, type, NOT NULL.
Rows table_columns(const Rows& fields) {
  Rows columns = {{"order_id", "text", "t"}, {"version", "bigint", "t"}};
  columns.insert(columns.end(), fields.begin(), fields.end());
  columns.push_back({"tidemark_pipeline", "text", "f"});
  columns.push_back({"tidemark_updated_at", "timestamp with time zone", "f"});
  return columns;
}

// orders()'s field columns.
const Rows kOrdersFieldColumns = {
    {"amount", "numeric(14,4)", "f"}, {"quantity", "bigint", "f"}, {"placed_at", "timestamp with time zone", "f"}};

class EntitySchemaTest : public ::testing::Test {
 protected:
  db::EntityTableChanges ensure(const EntityDeclaration& entity) {
    auto connection = db_.connect();
    return db::ensure_entity_table(*connection, entity);
  }

  // The table's columns as the catalog has them: name, type, NOT NULL.
  Rows columns(const std::string& table) const {
    return query_rows(db_,
                      "SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute "
                      "WHERE attrelid = '" + table + "'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum");
  }

  Rows recorded() const {
    return query_rows(db_, "SELECT name, table_name, definition::text FROM tidemark_entities ORDER BY name");
  }

  // The message of the EntitySchemaError `entity` raises; "" when none.
  std::string refusal(const EntityDeclaration& entity) {
    try {
      ensure(entity);
    } catch (const db::EntitySchemaError& error) {
      return error.what();
    }
    return "";
  }

  // ensure(entity) on two connections at once, while this test holds the migration lock; both
  // are let go only once both wait on it, so they run one after the other. Their results.
  std::vector<db::EntityTableChanges> ensure_twice_at_once(const EntityDeclaration& entity) {
    auto holder = db_.connect();
    pqxx::work hold(*holder);
    hold.exec_params(std::string(sql::kMigrateLock), db::kMigrationLockId);
    std::vector<std::future<db::EntityTableChanges>> ensuring;
    for (int i = 0; i < 2; ++i) {
      ensuring.push_back(std::async(std::launch::async, [this, &entity] { return ensure(entity); }));
    }
    const std::string waiting =
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";
    bool went_ahead = false;
    while (!went_ahead && db_.scalar(waiting) != "2") {
      for (auto& one : ensuring) {
        went_ahead = went_ahead || one.wait_for(std::chrono::milliseconds(1)) == std::future_status::ready;
      }
    }
    EXPECT_FALSE(went_ahead) << "one went ahead while the migration lock was held";
    hold.commit();
    std::vector<db::EntityTableChanges> results;
    for (auto& one : ensuring) results.push_back(one.get());
    return results;
  }

  TestDatabase db_;
};

TEST_F(EntitySchemaTest, AMissingTableIsCreatedWithNullableFieldColumnsAndRecorded) {
  const auto changes = ensure(orders());
  EXPECT_TRUE(changes.created);
  EXPECT_FALSE(changes.adopted);
  EXPECT_EQ(columns("orders"), table_columns(kOrdersFieldColumns));
  EXPECT_EQ(db_.scalar("SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                       "AND a.attnum = ANY (i.indkey) WHERE i.indrelid = 'orders'::regclass AND i.indisprimary"),
            "order_id");
  EXPECT_EQ(recorded(),
            (Rows{{"orders", "orders",
                   R"({"key": "order_id", "table": "orders", "fields": [{"name": "amount", "type": "decimal", )"
                   R"("scale": 4, "required": true, "precision": 14}, {"name": "quantity", "type": "integer", )"
                   R"("required": false}, {"name": "placed_at", "type": "timestamp", "required": false}], )"
                   R"("revision": "version", "extra_fields": "ignore", "partition_by": "order_id"})"}}));
  // Every type's column, and `extra` when kept.
  EntityDeclaration every = orders();
  every.name = "every";
  every.table = "every_type";
  every.extra_fields = ExtraFields::kKeep;
  every.fields = {{.name = "t", .type = FieldType::kText},       {.name = "i", .type = FieldType::kInteger},
                  {.name = "d", .type = FieldType::kDecimal, .precision = 38, .scale = 0},
                  {.name = "ts", .type = FieldType::kTimestamp}, {.name = "dt", .type = FieldType::kDate},
                  {.name = "b", .type = FieldType::kBoolean},    {.name = "j", .type = FieldType::kJson}};
  ensure(every);
  EXPECT_EQ(columns("every_type"), table_columns({{"t", "text", "f"},
                                                  {"i", "bigint", "f"},
                                                  {"d", "numeric(38,0)", "f"},
                                                  {"ts", "timestamp with time zone", "f"},
                                                  {"dt", "date", "f"},
                                                  {"b", "boolean", "f"},
                                                  {"j", "jsonb", "f"},
                                                  {"extra", "jsonb", "f"}}));
}

TEST_F(EntitySchemaTest, TheSameDeclarationAgainChangesNothing) {
  ensure(orders());
  const Rows before = recorded();
  const std::string updated_at = db_.scalar("SELECT updated_at FROM tidemark_entities");
  const auto changes = ensure(orders());
  EXPECT_FALSE(changes.created);
  EXPECT_FALSE(changes.adopted);
  EXPECT_TRUE(changes.added_columns.empty());
  EXPECT_TRUE(changes.unused_columns.empty());
  EXPECT_EQ(recorded(), before);
  EXPECT_EQ(db_.scalar("SELECT updated_at FROM tidemark_entities"), updated_at);
}

TEST_F(EntitySchemaTest, ANewFieldAddsANullableColumnAndARemovedOneLeavesItsColumnUnused) {
  ensure(orders());
  db_.scalar("INSERT INTO orders (order_id, version, amount) VALUES ('o-1', 1, 2.5) RETURNING 1");
  EntityDeclaration changed = orders();
  changed.fields.erase(changed.fields.begin() + 1);  // quantity
  changed.fields.push_back({.name = "paid", .type = FieldType::kBoolean, .required = true});
  const auto changes = ensure(changed);
  EXPECT_FALSE(changes.created);
  EXPECT_EQ(changes.added_columns, std::vector<std::string>{"paid"});
  EXPECT_EQ(changes.unused_columns, std::vector<std::string>{"quantity"});
  Rows extended = table_columns(kOrdersFieldColumns);
  extended.push_back({"paid", "boolean", "f"});  // a new column comes after the bookkeeping ones
  EXPECT_EQ(columns("orders"), extended);
  EXPECT_EQ(query_rows(db_, "SELECT order_id, amount::text, paid IS NULL FROM orders"),
            (Rows{{"o-1", "2.5000", "t"}}));
  EXPECT_NE(recorded()[0][2].find(R"({"name": "paid", "type": "boolean", "required": true})"), std::string::npos);
  // The field back again: its column is there, of its type, and used as it was.
  const auto again = ensure(orders());
  EXPECT_TRUE(again.added_columns.empty());
  EXPECT_EQ(again.unused_columns, std::vector<std::string>{"paid"});
}

TEST_F(EntitySchemaTest, AChangeThatCouldLoseOrReinterpretAValueIsRefusedWithTheStatementToRunByHand) {
  ensure(orders());
  const Rows before = columns("orders");
  const Rows declaration = recorded();
  const auto with_field = [](int index, FieldSpec spec) {
    EntityDeclaration entity = orders();
    entity.fields[static_cast<std::size_t>(index)] = std::move(spec);
    return entity;
  };
  EXPECT_EQ(refusal(with_field(0, {.name = "amount", .type = FieldType::kDecimal, .precision = 14, .scale = 2})),
            "table orders, column amount: is numeric(14,4), the config says decimal(14,2); Tidemark will not change "
            "it: fewer digits after the point (2, was 4): PostgreSQL would round every stored value to 2 digits; to "
            "change it by hand: ALTER TABLE \"orders\" ALTER COLUMN \"amount\" TYPE numeric(14,2)");
  EXPECT_EQ(refusal(with_field(0, {.name = "amount", .type = FieldType::kDecimal, .precision = 12, .scale = 4})),
            "table orders, column amount: is numeric(14,4), the config says decimal(12,4); Tidemark will not change "
            "it: fewer digits before the point (8, was 10): a stored value with more would make it fail; to change "
            "it by hand: ALTER TABLE \"orders\" ALTER COLUMN \"amount\" TYPE numeric(12,4)");
  EXPECT_EQ(refusal(with_field(1, {.name = "quantity", .type = FieldType::kText})),
            "table orders, column quantity: is bigint, the config says text; Tidemark will not change it: bigint into "
            "text: stored values would become PostgreSQL's text form of them, which need not be the form the records "
            "carry, so an unchanged record could conflict with its own row; to change it by hand: ALTER TABLE "
            "\"orders\" ALTER COLUMN \"quantity\" TYPE text");
  EXPECT_EQ(refusal(with_field(2, {.name = "placed_at", .type = FieldType::kDate})),
            "table orders, column placed_at: is timestamp with time zone, the config says date; Tidemark will not "
            "change it: timestamp with time zone into date: not a change that keeps every stored value as it is; to "
            "change it by hand: ALTER TABLE \"orders\" ALTER COLUMN \"placed_at\" TYPE date USING "
            "\"placed_at\"::date");
  // Every mismatch at once, one line each in table order; a refused declaration changes
  // nothing, not even a new field or a widening beside it.
  EntityDeclaration several = orders();
  several.fields[0] = {.name = "amount", .type = FieldType::kDecimal, .precision = 16, .scale = 2};
  several.fields[1] = {.name = "quantity", .type = FieldType::kJson};
  several.fields[2] = {.name = "placed_at", .type = FieldType::kTimestamp};
  several.fields.push_back({.name = "note", .type = FieldType::kText});
  const std::string message = refusal(several);
  EXPECT_EQ(message.substr(0, message.find('\n')),
            "table orders, column amount: is numeric(14,4), the config says decimal(16,2); Tidemark will not change "
            "it: fewer digits after the point (2, was 4): PostgreSQL would round every stored value to 2 digits; to "
            "change it by hand: ALTER TABLE \"orders\" ALTER COLUMN \"amount\" TYPE numeric(16,2)");
  EXPECT_EQ(message.substr(message.find('\n') + 1),
            "table orders, column quantity: is bigint, the config says json; Tidemark will not change it: bigint into "
            "json: not a change that keeps every stored value as it is; to change it by hand: ALTER TABLE \"orders\" "
            "ALTER COLUMN \"quantity\" TYPE jsonb USING \"quantity\"::jsonb");
  EntityDeclaration widened_and_narrowed = orders();
  widened_and_narrowed.fields[0].precision = 20;  // would be widened
  widened_and_narrowed.fields[1] = {.name = "quantity", .type = FieldType::kDecimal, .precision = 10, .scale = 0};
  EXPECT_NE(refusal(widened_and_narrowed).find("column quantity: is bigint, the config says decimal(10,0)"),
            std::string::npos);
  EXPECT_EQ(columns("orders"), before);
  EXPECT_EQ(recorded(), declaration);
}

// docs/entities.md "Schema changes": more digits at the same scale, more fraction digits with
// as many integer digits, an integer into a decimal wide enough; the rows stay as they were,
// wider values fit from then on, and the new declaration is recorded.
TEST_F(EntitySchemaTest, AWideningThatLosesNothingIsMadeOnATableThatHoldsRows) {
  ensure(orders());
  db_.scalar("INSERT INTO orders (order_id, version, amount, quantity) VALUES "
             "('o-1', 1, 9999999999.9999, 9223372036854775807), ('o-2', 3, -0.5, -9223372036854775808) RETURNING 1");
  EntityDeclaration wider = orders();
  wider.fields[0].precision = 20;  // numeric(14,4) -> numeric(20,4)
  wider.fields[1] = {.name = "quantity", .type = FieldType::kDecimal, .precision = 21, .scale = 2};
  const auto changes = ensure(wider);
  ASSERT_EQ(changes.altered_columns.size(), 2u);
  EXPECT_EQ(changes.altered_columns[0].column, "amount");
  EXPECT_EQ(changes.altered_columns[0].from, "numeric(14,4)");
  EXPECT_EQ(changes.altered_columns[0].to, "numeric(20,4)");
  EXPECT_EQ(changes.altered_columns[0].statement, R"(ALTER TABLE "orders" ALTER COLUMN "amount" TYPE numeric(20,4))");
  EXPECT_EQ(changes.altered_columns[1].statement,
            R"(ALTER TABLE "orders" ALTER COLUMN "quantity" TYPE numeric(21,2))");
  EXPECT_TRUE(changes.added_columns.empty());
  EXPECT_EQ(columns("orders"), table_columns({{"amount", "numeric(20,4)", "f"},
                                              {"quantity", "numeric(21,2)", "f"},
                                              {"placed_at", "timestamp with time zone", "f"}}));
  EXPECT_EQ(query_rows(db_, "SELECT order_id, version, amount::text, quantity::text FROM orders ORDER BY order_id"),
            (Rows{{"o-1", "1", "9999999999.9999", "9223372036854775807.00"},
                  {"o-2", "3", "-0.5000", "-9223372036854775808.00"}}));
  db_.scalar("UPDATE orders SET amount = 9999999999999999.9999, quantity = 1234567890123456789.25 "
             "WHERE order_id = 'o-2' RETURNING 1");
  EXPECT_NE(recorded()[0][2].find(R"({"name": "quantity", "type": "decimal", "scale": 2, "required": false, )"
                                  R"("precision": 21})"),
            std::string::npos)
      << recorded()[0][2];
  // Done once: the same declaration again changes nothing.
  EXPECT_TRUE(ensure(wider).altered_columns.empty());
  // The read-only check sees what a run would widen, and widens nothing.
  EntityDeclaration widest = wider;
  widest.fields[0].precision = 24;
  auto connection = db_.connect();
  const auto check = db::check_entity_table(*connection, widest);
  EXPECT_TRUE(check.problems.empty());
  ASSERT_EQ(check.altered_columns.size(), 1u);
  EXPECT_EQ(check.altered_columns[0].column, "amount");
  EXPECT_EQ(columns("orders")[2], (Rows::value_type{"amount", "numeric(20,4)", "f"}));
}

TEST_F(EntitySchemaTest, AForeignTableThatMatchesIsAdoptedWithTheBookkeepingColumnsAdded) {
  db_.scalar(
      "CREATE TABLE orders (order_id text PRIMARY KEY, version bigint NOT NULL, amount numeric(14,4), "
      "quantity bigint NOT NULL DEFAULT 0, placed_at timestamptz, note text, created date NOT NULL DEFAULT "
      "current_date); SELECT 1");
  const auto changes = ensure(orders());
  EXPECT_FALSE(changes.created);
  EXPECT_TRUE(changes.adopted);
  EXPECT_EQ(changes.added_columns, (std::vector<std::string>{"tidemark_pipeline", "tidemark_updated_at"}));
  EXPECT_EQ(changes.unused_columns, (std::vector<std::string>{"note", "created"}));
  EXPECT_EQ(recorded().size(), 1u);
  EXPECT_EQ(columns("orders").back(), (Rows::value_type{"tidemark_updated_at", "timestamp with time zone", "f"}));
  // Adopted, it is Tidemark's: the next time changes nothing, a new field extends it.
  EXPECT_FALSE(ensure(orders()).adopted);
  EntityDeclaration extended = orders();
  extended.fields.push_back({.name = "paid", .type = FieldType::kBoolean});
  const auto extension = ensure(extended);
  EXPECT_FALSE(extension.adopted);
  EXPECT_EQ(extension.added_columns, std::vector<std::string>{"paid"});
}

TEST_F(EntitySchemaTest, AForeignTableThatDoesNotMatchIsRefusedAndLeftAsItIs) {
  struct Case {
    std::string table;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"order_id bigint PRIMARY KEY, version bigint NOT NULL, amount numeric(14,4), quantity bigint, placed_at "
       "timestamptz",
       "table orders, column order_id: is bigint, the config says the key, text primary key"},
      {"order_id text, version bigint NOT NULL, amount numeric(14,4), quantity bigint, placed_at timestamptz",
       "table orders, column order_id: is text but not the table's primary key, the config says the key, text "
       "primary key"},
      {"order_id text PRIMARY KEY, version integer NOT NULL, amount numeric(14,4), quantity bigint, placed_at "
       "timestamptz",
       "table orders, column version: is integer, the config says the revision, bigint NOT NULL"},
      {"order_id text PRIMARY KEY, version bigint NOT NULL, amount numeric(14,4), quantity bigint, placed_at "
       "timestamptz, note text NOT NULL",
       "table orders, column note: is text NOT NULL without a default, the config says nothing about it"},
      {"order_id text PRIMARY KEY, version bigint NOT NULL, amount numeric(12,2), quantity bigint, placed_at "
       "timestamptz",
       "table orders, column amount: is numeric(12,2), the config says decimal(14,4); a table is adopted only as it "
       "is; to change it by hand: ALTER TABLE \"orders\" ALTER COLUMN \"amount\" TYPE numeric(14,4)"},
      {"order_id text PRIMARY KEY, version bigint NOT NULL, amount numeric(14,4), quantity bigint, placed_at "
       "timestamp",
       "table orders, column placed_at: is timestamp without time zone, the config says timestamp; Tidemark will "
       "not change it: timestamp without time zone into timestamp: not a change that keeps every stored value as "
       "it is; to change it by hand: ALTER TABLE \"orders\" ALTER COLUMN \"placed_at\" TYPE timestamp with time "
       "zone USING \"placed_at\"::timestamp with time zone"},
      {"order_id text PRIMARY KEY, version bigint NOT NULL, amount numeric(14,4), placed_at timestamptz",
       "table orders, column quantity: is missing, the config says integer"},
      {"order_id text PRIMARY KEY, version bigint NOT NULL, amount numeric(14,4), quantity bigint, placed_at "
       "timestamptz, tidemark_pipeline integer",
       "table orders, column tidemark_pipeline: is integer, Tidemark's bookkeeping column is text"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.table);
    db_.scalar("DROP TABLE IF EXISTS orders; CREATE TABLE orders (" + c.table + "); SELECT 1");
    const Rows before = columns("orders");
    EXPECT_EQ(refusal(orders()), c.message);
    EXPECT_EQ(columns("orders"), before);
    EXPECT_TRUE(recorded().empty());
  }
}

TEST_F(EntitySchemaTest, ATableAnotherEntityHasIsRefused) {
  ensure(orders());
  EntityDeclaration other = orders();
  other.name = "purchases";
  EXPECT_EQ(refusal(other), "table orders belongs to entity orders; entity purchases cannot use it");
}

// Two processes starting at once serialize on the migration lock: both succeed, one creates.
TEST_F(EntitySchemaTest, TwoConnectionsEnsuringAtOnceBothSucceedAndOneCreatesTheTable) {
  int created = 0;
  for (const auto& changes : ensure_twice_at_once(orders())) created += changes.created ? 1 : 0;
  EXPECT_EQ(created, 1);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pg_class WHERE relname = 'orders' AND relkind = 'r'"), "1");
  EXPECT_EQ(recorded().size(), 1u);
}

// PostgreSQL refuses to change a column a view of the user's reads: a configuration error with
// its reason and the statement, and nothing changed.
TEST_F(EntitySchemaTest, AWideningPostgresRefusesIsAnErrorWithItsReasonAndTheStatement) {
  ensure(orders());
  db_.scalar("CREATE VIEW big_orders AS SELECT order_id FROM orders WHERE amount > 100; SELECT 1");
  const Rows declaration = recorded();
  EntityDeclaration wider = orders();
  wider.fields[0].precision = 18;
  EXPECT_EQ(refusal(wider),
            "table orders, column amount: is numeric(14,4), the declaration needs numeric(18,4); PostgreSQL refused to "
            "widen it (ERROR:  cannot alter type of a column used by a view or rule); to change it by hand: ALTER "
            "TABLE \"orders\" ALTER COLUMN \"amount\" TYPE numeric(18,4)");
  EXPECT_EQ(columns("orders")[2], (Rows::value_type{"amount", "numeric(14,4)", "f"}));
  EXPECT_EQ(recorded(), declaration);
}

// Two runs widening at once: the second waits on the migration lock, then finds the column
// widened and the declaration recorded, so both succeed and one alters.
TEST_F(EntitySchemaTest, TwoConnectionsWideningAtOnceBothSucceedAndOneAltersTheColumn) {
  ensure(orders());
  db_.scalar("INSERT INTO orders (order_id, version, amount) VALUES ('o-1', 1, 1.5) RETURNING 1");
  EntityDeclaration wider = orders();
  wider.fields[0].precision = 18;
  std::size_t altered = 0;
  for (const auto& changes : ensure_twice_at_once(wider)) altered += changes.altered_columns.size();
  EXPECT_EQ(altered, 1u);
  EXPECT_EQ(columns("orders")[2], (Rows::value_type{"amount", "numeric(18,4)", "f"}));
  EXPECT_EQ(db_.scalar("SELECT amount::text FROM orders"), "1.5000");
}

}  // namespace
}  // namespace tidemark::pipeline
