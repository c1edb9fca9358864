// Two pipelines loading one entity at the same time (docs/entities.md "Two
// pipelines on one entity"): two real `tidemark run` processes, started together, load overlapping keys with
// different revisions in many small batches, so that their batches interleave on the same rows
// and the same (destination, partition) sequences. A batch whose keys another transaction wrote
// after its snapshot fails with SQLSTATE 40001 and is retried on a new snapshot; whatever order
// the batches commit in, the database must end as the rules say. Run on the declared entity
// `orders` and on the built-in `transaction` entity, whose effects feed the views.
//
// The data, per key (a fixed customer or account, its partition): revisions 1..R, each sent by
// one pipeline or by both with the same payload, in rounds of ascending revision over a few
// dozen keys (so both runs are at the same rows at the same time), with late copies of earlier
// revisions. A few keys are contested: both pipelines send the highest revision R with
// different payloads. That is the only cross-pipeline same-revision disagreement, because it is
// the only one whose outcome the rules fix whatever the timing: whichever commits first is
// stored (nothing can replace it, R being the highest) and the other meets it as the stored row
// of its revision, a conflict. A disagreement below R would be a conflict or a stale record
// depending on whether R was stored first (docs/cli.md "Outcomes"), which no test can predict.
//
// The two pipelines have two config files with the same entity and the same destinations: one
// file may not list an http destination twice (docs/configuration.md), and sharing them is
// what makes the two writers contend for the same sequence rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <set>
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
using testing::start_tidemark;

constexpr char kSecretEnv[] = "TIDEMARK_TWO_PIPELINES_TEST_SECRET";
constexpr char kAlpha[] = "alpha";
constexpr char kBeta[] = "beta";

struct Payload {
  std::string partition;  // customer or account: fixed per key
  std::int64_t quantity = 0;
  std::string status;
  std::string price;  // canonical numeric(12,2)
};

// Revision `revision` of key `k`; `variant` 0 for the payload both pipelines agree on, 1 and 2
// for alpha's and beta's sides of a contested revision.
Payload payload(int k, int revision, int variant) {
  static const char* const kStatuses[] = {"placed", "paid", "shipped", "delivered"};
  const int cents = (revision * 7 + variant * 3) % 100;
  return {.partition = "c" + std::to_string(k % 8),
          .quantity = revision * 10 + variant,
          .status = kStatuses[(k + revision + variant) % 4],
          .price = std::to_string(k) + "." + (cents < 10 ? "0" : "") + std::to_string(cents)};
}

// How one entity is written and read back.
struct Shape {
  std::string entity;          // "" for the built-in one
  std::string declaration;     // the entities: block
  std::string header;          // the CSV header
  std::function<std::string(const std::string& key, int revision, const Payload&)> line;
  std::function<std::string(const Payload&)> summary;  // as `table_query` prints the payload
  std::string table_query;     // key, revision, summary, the pipeline that wrote it last
  // Over outbox rows: the key, the revision, the fields as jsonb, the previous fields as jsonb
  // (NULL when there is none) and the previous revision (NULL when the payload has none).
  std::string key_sql, revision_sql, fields_sql, previous_fields_sql, previous_revision_sql;
};

Shape orders() {
  Shape s;
  s.entity = "orders";
  s.declaration =
      "entities:\n"
      "  orders:\n"
      "    key: order_id\n"
      "    revision: version\n"
      "    partition_by: customer_id\n"
      "    fields:\n"
      "      customer_id: {type: text, required: true}\n"
      "      currency:    {type: text, required: true, max_length: 3}\n"
      "      quantity:    {type: integer, required: true}\n"
      "      status:      {type: text, required: true}\n"
      "      price:       {type: decimal, precision: 12, scale: 2, required: true}\n";
  s.header = "order_id,version,customer_id,currency,quantity,status,price\n";
  s.line = [](const std::string& key, int revision, const Payload& p) {
    return key + "," + std::to_string(revision) + "," + p.partition + ",EUR," + std::to_string(p.quantity) + "," +
           p.status + "," + p.price + "\n";
  };
  s.summary = [](const Payload& p) { return std::to_string(p.quantity) + " " + p.status + " " + p.price; };
  s.table_query =
      "SELECT order_id, version, quantity || ' ' || status || ' ' || price, tidemark_pipeline FROM orders";
  s.key_sql = "payload->>'key'";
  s.revision_sql = "(payload->>'revision')::bigint";
  s.fields_sql = "payload->'fields'";
  s.previous_fields_sql = "payload->'previous'->'fields'";
  s.previous_revision_sql = "payload->'previous'->'revision'";
  return s;
}

// The legacy envelope: a flat payload with previous_<field>, no previous revision.
Shape transactions() {
  Shape s;
  s.header = "transaction_id,source_revision,amount,account_id\n";
  s.line = [](const std::string& key, int revision, const Payload& p) {
    return key + "," + std::to_string(revision) + "," + p.price + "," + p.partition + "\n";
  };
  s.summary = [](const Payload& p) { return p.price + " " + p.partition; };
  s.table_query =
      "SELECT transaction_id, source_revision, amount || ' ' || account_id, pipeline FROM transaction_state";
  s.key_sql = "payload->>'transaction_id'";
  s.revision_sql = "(payload->>'source_revision')::bigint";
  s.fields_sql = "jsonb_build_object('amount', payload->'amount', 'account_id', payload->'account_id')";
  s.previous_fields_sql =
      "CASE WHEN payload->>'previous_amount' IS NOT NULL THEN jsonb_build_object('amount', "
      "payload->'previous_amount', 'account_id', payload->'previous_account_id') END";
  s.previous_revision_sql = "NULL::jsonb";
  return s;
}

std::string config(const Shape& shape, const std::string& pipeline, const std::filesystem::path& source) {
  return shape.declaration + "pipelines:\n  " + pipeline + ":\n" +
         (shape.entity.empty() ? "" : "    entity: " + shape.entity + "\n") +
         "    batch_size: 3\n"
         "    source: {kind: file, path: " +
         source.string() +
         ", format: csv}\n"
         "    destinations:\n"
         "      - {name: ledger, kind: http, url: http://127.0.0.1:9/ledger, secret_env: " +
         kSecretEnv +
         "}\n"
         "      - {name: audit, kind: http, url: http://127.0.0.1:9/audit, secret_env: " +
         kSecretEnv + "}\n";
}

struct Workload {
  std::map<std::string, int> highest;           // key -> its highest revision R
  std::set<std::string> contested;              // keys whose R both send, with different payloads
  std::map<std::string, std::string> expected;  // key -> its summary at R (contested: alpha's side)
  std::map<std::string, std::string> expected_beta;  // contested key -> beta's side
  std::string alpha;
  std::string beta;
  std::uint64_t alpha_records = 0;
  std::uint64_t beta_records = 0;
};

Workload make_workload(const Shape& shape, std::uint32_t seed, int keys) {
  std::mt19937 random(seed);
  Workload w;
  w.alpha = w.beta = shape.header;
  std::vector<int> highest(keys);
  std::vector<std::vector<int>> owner(keys);  // per revision: 0 alpha, 1 beta, 2 both
  int rounds = 0;
  for (int k = 0; k < keys; ++k) {
    highest[k] = 4 + static_cast<int>(random() % 20);
    rounds = std::max(rounds, highest[k]);
    for (int r = 0; r <= highest[k]; ++r) owner[k].push_back(static_cast<int>(random() % 3));
    const std::string key = "k" + std::to_string(k);
    w.highest[key] = highest[k];
    const bool contested = random() % 5 == 0;
    if (contested) {
      w.contested.insert(key);
      w.expected_beta[key] = shape.summary(payload(k, highest[k], 2));
    }
    w.expected[key] = shape.summary(payload(k, highest[k], contested ? 1 : 0));
  }
  auto emit = [&](bool to_alpha, int k, int revision, int variant) {
    (to_alpha ? w.alpha : w.beta) += shape.line("k" + std::to_string(k), revision, payload(k, revision, variant));
    ++(to_alpha ? w.alpha_records : w.beta_records);
  };
  std::vector<int> order(keys);
  for (int k = 0; k < keys; ++k) order[k] = k;
  for (int r = 1; r <= rounds; ++r) {
    std::shuffle(order.begin(), order.end(), random);
    for (const int k : order) {
      if (r > highest[k]) continue;
      if (r == highest[k] && w.contested.contains("k" + std::to_string(k))) {
        emit(true, k, r, 1);
        emit(false, k, r, 2);
      } else {
        if (owner[k][r] != 1) emit(true, k, r, 0);
        if (owner[k][r] != 0) emit(false, k, r, 0);
      }
      // A late copy of an earlier revision, to either pipeline: stale, superseded or unchanged.
      if (r > 1 && random() % 6 == 0) emit(random() % 2 == 0, k, 1 + static_cast<int>(random() % (r - 1)), 0);
    }
  }
  return w;
}

std::uint64_t count_of(const std::string& text, const std::string& what) {
  std::uint64_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::string joined(const Rows& rows) {
  std::string out;
  for (const auto& row : rows) {
    for (const auto& column : row) out += column + " | ";
    out += "\n";
  }
  return out;
}

// Runs the two pipelines of `shape` at once on one seeded workload and checks the database.
void two_pipelines_at_once(const Shape& shape) {
  const std::uint32_t seed = 20261214;
  SCOPED_TRACE("seed " + std::to_string(seed));
  constexpr int kKeys = 60;
  const Workload w = make_workload(shape, seed, kKeys);
  TestDatabase db;
  TempDir dir;
  const auto alpha_config = dir.write("alpha.yaml", config(shape, kAlpha, dir.write("alpha.csv", w.alpha)));
  const auto beta_config = dir.write("beta.yaml", config(shape, kBeta, dir.write("beta.csv", w.beta)));

  ProcessOptions options;
  options.env[kSecretEnv] = "whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ=";
  auto start = [&](const char* pipeline, const std::filesystem::path& file) {
    return start_tidemark({"run", "--pipeline", pipeline, "--config", file.string(), "--database", db.url(), "--json"},
                          options);
  };
  auto alpha_process = start(kAlpha, alpha_config);
  auto beta_process = start(kBeta, beta_config);
  const ProcessResult alpha = alpha_process->wait();
  const ProcessResult beta = beta_process->wait();
  ASSERT_EQ(alpha.exit_code, 0) << alpha.out << alpha.err;
  ASSERT_EQ(beta.exit_code, 0) << beta.out << beta.err;

  // They interleaved: the ledger's commit order switches pipeline often, and batches may meet
  // rows the other pipeline wrote after their snapshot (the retried serialization failures).
  const std::string switches = db.scalar(
      "SELECT count(*) FROM (SELECT pipeline, lag(pipeline) OVER (ORDER BY id) AS before FROM batch_ledger) s "
      "WHERE pipeline <> before");
  const std::uint64_t retried = count_of(alpha.err + beta.err, "another transaction wrote");
  std::cout << "seed " << seed << ": " << w.alpha_records << " + " << w.beta_records << " records, "
            << w.contested.size() << " contested keys, " << switches << " pipeline switches in commit order, "
            << retried << " batches retried after a concurrent write, " << count_of(alpha.err + beta.err, "deadlock")
            << " after a deadlock\n";
  // How many batches meet the other's writes depends on timing (a sanitized build met none),
  // so only the interleaving is asserted; the concurrent-write rule itself is proved
  // deterministically by EntityApplyTest.*SerializationFailure and ConcurrentWriters.*.
  EXPECT_GE(std::stoi(switches), 50);

  // Nothing lost: every record of each input is accounted for in the ledger; each key was
  // inserted once, by one pipeline or the other; the contested keys' losers are the conflicts.
  EXPECT_EQ(query_rows(db, "SELECT pipeline, sum(input) FROM batch_ledger GROUP BY 1 ORDER BY 1"),
            (Rows{{kAlpha, std::to_string(w.alpha_records)}, {kBeta, std::to_string(w.beta_records)}}));
  EXPECT_EQ(query_rows(db, "SELECT sum(inserted), sum(invalid), sum(conflict) FROM batch_ledger"),
            (Rows{{std::to_string(kKeys), "0", std::to_string(w.contested.size())}}));

  // The table: every key at its highest revision, with that revision's payload; a contested
  // key with the payload of the pipeline that stored it.
  const Rows table = query_rows(db, shape.table_query);
  ASSERT_EQ(table.size(), static_cast<std::size_t>(kKeys));
  std::map<std::string, std::string> stored_by;
  for (const auto& row : table) {
    SCOPED_TRACE(row[0]);
    ASSERT_TRUE(w.highest.contains(row[0]));
    EXPECT_EQ(row[1], std::to_string(w.highest.at(row[0])));
    const bool beta_side = w.contested.contains(row[0]) && row[3] == kBeta;
    EXPECT_EQ(row[2], beta_side ? w.expected_beta.at(row[0]) : w.expected.at(row[0])) << "stored by " << row[3];
    stored_by[row[0]] = row[3];
  }

  // The quarantine: one conflict per contested key at its highest revision, the record of the
  // pipeline that did not store it.
  const Rows quarantine = query_rows(
      db,
      "SELECT transaction_id, source_revision, pipeline, reason, entity, field IS NULL FROM quarantine ORDER BY 1");
  ASSERT_EQ(quarantine.size(), w.contested.size()) << joined(quarantine);
  for (const auto& row : quarantine) {
    SCOPED_TRACE(row[0]);
    ASSERT_TRUE(w.contested.contains(row[0])) << "not a contested key";
    EXPECT_EQ(row[1], std::to_string(w.highest.at(row[0])));
    EXPECT_NE(row[2], stored_by.at(row[0]));
    EXPECT_EQ(row[3], "conflict");
    EXPECT_EQ(row[4], shape.entity.empty() ? "transaction" : shape.entity);
    EXPECT_EQ(row[5], "t");
  }

  // Effects: exactly one outbox row per applied version and destination (the ledger's
  // inserted + updated), the same versions for both destinations.
  const std::string applied = db.scalar("SELECT sum(inserted + updated) FROM batch_ledger");
  EXPECT_EQ(query_rows(db, "SELECT destination, count(*), count(DISTINCT idempotency_key) FROM outbox GROUP BY 1 "
                           "ORDER BY 1"),
            (Rows{{"audit", applied, applied}, {"ledger", applied, applied}}));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM (SELECT " + shape.key_sql + ", " + shape.revision_sql +
                      " FROM outbox GROUP BY 1, 2 HAVING count(*) FILTER (WHERE destination = 'ledger') <> 1 "
                      "OR count(*) FILTER (WHERE destination = 'audit') <> 1) s"),
            "0");

  // Sequences per (destination, partition): 1..n, no gap, no duplicate.
  EXPECT_EQ(query_rows(db,
                       "SELECT destination, partition_key, count(*), count(DISTINCT sequence), min(sequence), "
                       "max(sequence) FROM outbox GROUP BY 1, 2 "
                       "HAVING count(*) <> count(DISTINCT sequence) OR min(sequence) <> 1 OR max(sequence) <> count(*)"),
            Rows{});
  // The log's numbers per partition: no duplicate, and the key's counter at the newest.
  EXPECT_EQ(query_rows(db,
                       "SELECT c.partition_key, count(*), count(DISTINCT c.key_sequence), max(c.key_sequence), "
                       "max(s.last_sequence) FROM tidemark_change c JOIN tidemark_partition_sequence s "
                       "USING (partition_key) GROUP BY 1 "
                       "HAVING count(*) <> count(DISTINCT c.key_sequence) OR max(c.key_sequence) <> max(s.last_sequence)"),
            Rows{});
  EXPECT_EQ(db.scalar("SELECT count(DISTINCT partition_key) FROM outbox"), "8");

  // Each key's events, in delivery (sequence) order, tell its history without a hole: the first
  // has no previous, each next one's previous is the event before it (fields, and revision where
  // the payload carries it), revisions only grow, and the last is the stored row.
  const std::string events = "SELECT destination, sequence, " + shape.key_sql + " AS key, " + shape.revision_sql +
                             " AS revision, " + shape.fields_sql + " AS fields, " + shape.previous_fields_sql +
                             " AS previous_fields, " + shape.previous_revision_sql +
                             " AS previous_revision FROM outbox";
  const Rows broken = query_rows(
      db,
      "SELECT destination, key, sequence, revision, previous_revision::text, previous_fields::text, before_revision, "
      "before_fields::text FROM ("
      "  SELECT e.*, lag(revision) OVER w AS before_revision, lag(fields) OVER w AS before_fields"
      "    FROM (" +
          events +
          ") e WINDOW w AS (PARTITION BY destination, key ORDER BY sequence)) h "
          " WHERE CASE WHEN before_revision IS NULL THEN previous_fields IS NOT NULL"
          "            ELSE revision <= before_revision OR previous_fields IS DISTINCT FROM before_fields"
          "                 OR previous_revision <> to_jsonb(before_revision) END "
          " ORDER BY 1, 2, 3 LIMIT 10");
  EXPECT_EQ(broken, Rows{}) << "events whose previous is not the event before them (destination | key | sequence | "
                               "revision | previous revision | previous fields | the event before: revision | "
                               "fields):\n"
                            << joined(broken);
  Rows last_events = query_rows(
      db, "SELECT DISTINCT ON (key) key, revision FROM (" + events +
              " WHERE destination = 'ledger') e ORDER BY key, sequence DESC");
  std::sort(last_events.begin(), last_events.end());
  Rows stored_revisions;
  for (const auto& row : table) stored_revisions.push_back({row[0], row[1]});
  std::sort(stored_revisions.begin(), stored_revisions.end());
  EXPECT_EQ(last_events, stored_revisions);
}

//  until two bugs these tests found are fixed (pipeline/store and sql/ are not this
// change's to edit; the fix is in the report of branch wt-demo):
// - a retried batch (40001, 40P01) drops its connection, and with it the pipeline's lock, and
//   takes the lock again on a new session, which fails with PipelineBusy while the old backend
//   is still exiting (Committer::commit resets the connection on every retry): the run fails;
// - an update whose row another transaction updated after the statement's snapshot (to a lower
//   revision) passes the revision filter and is not counted as a surprise, so its effect's
//   `previous` (previous_amount for the built-in entity) is the row the snapshot read, not the
//   revision it replaced: a consumer folding deltas (account_balance) double counts.
TEST(EntityTwoPipelines, ADeclaredEntityEndsAtEachKeysHighestRevisionWithOneGaplessChainOfEffects) {
  two_pipelines_at_once(orders());
}

TEST(EntityTwoPipelines, TheBuiltInEntityEndsAtEachKeysHighestRevisionWithOneGaplessChainOfEffects) {
  two_pipelines_at_once(transactions());
}

}  // namespace
}  // namespace tidemark
