// The golden test of the built-in `transaction` entity: what main wrote and sent
// before entities were generated, recorded byte for byte, so that the generated apply
// statement can be shown to keep it. Two real `tidemark run`s (a CSV file in one batch, then a
// JSON Lines file in batches of 5) and one `tidemark relay --once` against a throwaway
// PostgreSQL and a real webhook receiver on 127.0.0.1, with the account_balance and
// daily_totals views as two more destinations. The inputs (tests/golden/transaction/input-1.csv,
// input-2.jsonl) reach every outcome: inserted (t01 …), superseded (t05 r1, t16 r2), duplicate
// (t01 r1 again, t07 r2 again), conflict (t06 within a batch, t17 against the stored row),
// invalid (1e3, 1e2, NaN, 1.005, 11 digits, no offset, 7 fraction digits, a bad or negative
// revision, an empty id, a control character, a wrong field count, broken JSON), updated with a
// previous amount, account or occurred_at (t01 twice, t03, t07, t15, t16), unchanged in another
// spelling (t02: -0.5 and another offset; t27: 3.1 for +3.10) and stale (t05 r1); accounts
// absent (t03 r1, t22), keys with a space and non-ASCII (percent-encoded in the headers), and
// acc-A with sequences 1 to 8 across five batches.
//
// The golden files in tests/golden/transaction/ pin: the run summaries; the outbox rows in id
// order (destination, idempotency_key, partition_key, sequence, status, attempts, last_error,
// payload::text) and the per-(destination, partition) sequences; transaction_state; the HTTP
// requests in idempotency-key order (method, target, Content-Type, webhook-id,
// Idempotency-Key, body bytes); the quarantine; the views account_balance_v1 and
// daily_totals_v1; batch_ledger and the checkpoint. The temporary folder's path is written
// `<dir>`.
//
// Left out because they follow the wall clock, each named where it is read: created_at,
// updated_at, delivered_at, next_attempt_at, committed_at and the like; webhook-timestamp and
// webhook-signature (the test checks instead that the signature is HMAC-SHA256 over
// `id.timestamp.body` with the test secret and that the timestamp is the time of the test);
// the day of a record without occurred_at in daily_totals (its creation day: written
// `<creation day>`). Serial ids are ordered by, never printed: a retried transaction skips
// values.
//
// Regenerate the golden files deliberately, after a change that is meant to alter them:
//   TIDEMARK_UPDATE_GOLDEN=1 build/e2e_tests --gtest_filter='GoldenTransaction.*'
// then review `git diff tests/golden/`. Without the variable the test compares, and a mismatch
// names the file and its first differing line.
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/process.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"
#include "tests/support/test_receiver.hpp"

namespace tidemark {
namespace {

using testing::ProcessOptions;
using testing::ProcessResult;
using testing::ReceivedRequest;
using testing::Rows;
using testing::TempDir;
using testing::TestDatabase;
using testing::TestReceiver;
using testing::query_rows;
using testing::run_tidemark;

constexpr char kSecret[] = "whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ=";
constexpr char kSecretKey[] = "tidemark-test-secret";  // the base64-decoded part of kSecret
constexpr char kSecretEnv[] = "TIDEMARK_GOLDEN_LEDGER_SECRET";

const std::filesystem::path& golden_dir() {
  static const std::filesystem::path dir = std::filesystem::path(TIDEMARK_SOURCE_DIR) / "tests/golden/transaction";
  return dir;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// One cell of a tab-separated golden line: reversible, and a value never spans lines.
std::string escape(const std::string& value) {
  std::string escaped;
  for (const char c : value) {
    switch (c) {
      case '\\': escaped += "\\\\"; break;
      case '\t': escaped += "\\t"; break;
      case '\n': escaped += "\\n"; break;
      case '\r': escaped += "\\r"; break;
      default: escaped += c;
    }
  }
  return escaped;
}

// A header line of column names, then one line per row.
std::string table(const std::string& columns, const Rows& rows) {
  std::string text = columns + "\n";
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) text += (i == 0 ? "" : "\t") + escape(row[i]);
    text += "\n";
  }
  return text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Compares `actual` with the golden file `name`, or writes it under TIDEMARK_UPDATE_GOLDEN=1.
// A mismatch shows the first differing line with a few lines of context, diff style.
void check_golden(const std::string& name, const std::string& actual) {
  const auto path = golden_dir() / name;
  const char* update = std::getenv("TIDEMARK_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << actual;
    std::cout << "[ golden ] wrote " << path.string() << "\n";
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(path))
      << path.string() << " is missing; record it with TIDEMARK_UPDATE_GOLDEN=1 (see the top of this test)";
  const std::string expected = read_file(path);
  if (expected == actual) return;
  const auto want = lines_of(expected);
  const auto got = lines_of(actual);
  std::size_t first = 0;
  while (first < want.size() && first < got.size() && want[first] == got[first]) ++first;
  std::ostringstream diff;
  diff << "--- " << path.string() << " (golden)\n+++ actual\n@@ first difference at line " << first + 1 << " @@\n";
  for (std::size_t i = first >= 3 ? first - 3 : 0; i < first; ++i) diff << " " << want[i] << "\n";
  for (std::size_t i = first; i < std::min(want.size(), first + 3); ++i) diff << "-" << want[i] << "\n";
  for (std::size_t i = first; i < std::min(got.size(), first + 3); ++i) diff << "+" << got[i] << "\n";
  if (want.size() == got.size() && first == want.size()) diff << "(the files differ only in their last newline)\n";
  ADD_FAILURE() << name << " differs from its golden file (regenerate deliberately with TIDEMARK_UPDATE_GOLDEN=1):\n"
                << diff.str();
}

std::string base64(const unsigned char* bytes, std::size_t size) {
  std::string encoded(4 * ((size + 2) / 3), '\0');
  const int length = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()), bytes, static_cast<int>(size));
  encoded.resize(static_cast<std::size_t>(length));
  return encoded;
}

// Standard Webhooks, computed here with OpenSSL rather than with the relay's own signing code.
std::string expected_signature(const ReceivedRequest& request) {
  const std::string message = request.webhook_id + "." + request.webhook_timestamp + "." + request.body;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_size = 0;
  HMAC(EVP_sha256(), kSecretKey, static_cast<int>(sizeof kSecretKey - 1),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &mac_size);
  return "v1," + base64(mac, mac_size);
}

std::string last_line(const std::string& text) {
  const auto lines = lines_of(text);
  return lines.empty() ? "" : lines.back();
}

class GoldenTransaction : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.path() / "in");
    std::filesystem::copy_file(golden_dir() / "input-1.csv", dir_.path() / "in" / "input-1.csv");
    std::filesystem::copy_file(golden_dir() / "input-2.jsonl", dir_.path() / "input-2.jsonl");
    config_ = dir_.write("config.yaml",
                         "pipelines:\n"
                         "  golden:\n"
                         "    source: {kind: file, path: " +
                             (dir_.path() / "in").string() +
                             ", format: csv}\n"
                             "    destinations:\n"
                             "      - {name: ledger, kind: http, url: " +
                             receiver_.url() + ", secret_env: " + kSecretEnv +
                             "}\n"
                             "      - {name: account_balance, kind: view}\n"
                             "      - {name: daily_totals, kind: view}\n"
                             "relay: {max_attempts: 3, base_delay: 10ms, max_delay: 50ms}\n")
                  .string();
  }

  ProcessResult tidemark(std::vector<std::string> args) const {
    args.insert(args.end(), {"--config", config_, "--database", db_.url()});
    ProcessOptions options;
    options.env[kSecretEnv] = kSecret;
    return run_tidemark(args, options);
  }

  // The temporary folder, canonical or not, as `<dir>`.
  std::string relative(std::string text) const {
    text = replace_all(std::move(text), std::filesystem::canonical(dir_.path()).string(), "<dir>");
    return replace_all(std::move(text), dir_.path().string(), "<dir>");
  }
  Rows rows(const std::string& sql) const {
    Rows result = query_rows(db_, sql);
    for (auto& row : result) {
      for (auto& cell : row) cell = relative(cell);
    }
    return result;
  }

  TestDatabase db_;
  TestReceiver receiver_{kSecret};
  TempDir dir_;
  std::string config_;
};

TEST_F(GoldenTransaction, RunsAndRelayReproduceTheRecordedRowsPayloadsAndRequests) {
  const auto first = tidemark({"run", "--pipeline", "golden", "--json"});
  ASSERT_EQ(first.exit_code, 0) << first.both();
  const auto second = tidemark({"run", "--pipeline", "golden", "--json", "--source",
                                (dir_.path() / "input-2.jsonl").string(), "--format", "jsonl", "--batch-size", "5"});
  ASSERT_EQ(second.exit_code, 0) << second.both();
  const std::int64_t relay_started = std::time(nullptr);
  const auto relayed = tidemark({"relay", "--once"});
  const std::int64_t relay_ended = std::time(nullptr);
  ASSERT_EQ(relayed.exit_code, 0) << relayed.both();

  check_golden("runs.jsonl", relative(last_line(first.out)) + "\n" + relative(last_line(second.out)) + "\n");

  // Excluded: id (a serial), next_attempt_at, created_at, delivered_at (the clock).
  check_golden("outbox.tsv",
               table("destination\tidempotency_key\tpartition_key\tsequence\tstatus\tattempts\tlast_error\tpayload",
                     rows("SELECT destination, idempotency_key, partition_key, sequence, status, attempts, last_error, "
                          "payload::text FROM outbox ORDER BY id")));
  // Each destination's stream of each key ends where its cursor is: the relay delivered everything.
  check_golden("destination_sequence.tsv",
               table("destination\tpartition_key\tlast_sequence",
                     rows("SELECT destination, partition_key, last_sequence FROM tidemark_cursor "
                          "ORDER BY destination, partition_key")));

  // Excluded: created_at and updated_at (the clock); pinned instead is whether the row was
  // rewritten after its insert (updated_at > created_at), which only the input decides.
  check_golden("transaction_state.tsv",
               table("transaction_id\tsource_revision\tamount\taccount_id\toccurred_at_utc\tpipeline\trewritten",
                     rows("SELECT transaction_id, source_revision, amount, account_id, "
                          "to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), pipeline, "
                          "updated_at > created_at FROM transaction_state ORDER BY transaction_id")));

  // Every ledger event arrived once, signed. Excluded: webhook-timestamp and webhook-signature,
  // which follow the clock; checked here instead.
  auto requests = receiver_.requests();
  std::sort(requests.begin(), requests.end(),
            [](const ReceivedRequest& a, const ReceivedRequest& b) { return a.idempotency_key < b.idempotency_key; });
  std::string http;
  for (const auto& request : requests) {
    SCOPED_TRACE(request.webhook_id);
    EXPECT_TRUE(request.signature_valid);
    const std::int64_t timestamp = std::stoll(request.webhook_timestamp);
    EXPECT_GE(timestamp, relay_started - 1);
    EXPECT_LE(timestamp, relay_ended + 1);
    EXPECT_EQ(request.webhook_signature, expected_signature(request));
    http += request.method + " " + request.target + "\n" + "Content-Type: " + request.content_type + "\n" +
            "webhook-id: " + request.webhook_id + "\n" + "Idempotency-Key: " + request.idempotency_key + "\n" +
            "body: " + escape(request.body) + "\n\n";
  }
  check_golden("http_requests.txt", http);

  // Excluded: id, created_at (the clock); source is the folder's path, written <dir>.
  check_golden("quarantine.tsv",
               table("pipeline\tsource\treason\tdetail\ttransaction_id\tsource_revision\traw\traw_bytes\tformat\t"
                     "decode_context\tposition\trun_id\treleased_at",
                     rows("SELECT pipeline, source, reason, detail, transaction_id, source_revision, raw, "
                          "raw_bytes IS NOT NULL, format, decode_context, position, run_id, released_at IS NOT NULL "
                          "FROM quarantine ORDER BY id")));

  // Excluded: updated_at (the clock).
  check_golden("account_balance_v1.tsv",
               table("account_id\tbalance\tversion",
                     rows("SELECT account_id, balance, version FROM account_balance_v1 ORDER BY account_id")));
  // A record without occurred_at counts on its event's creation day (docs/views.md): that day
  // is written <creation day> and its rows are summed, should the runs straddle midnight.
  check_golden("daily_totals_v1.tsv",
               table("day\ttotal\tevents",
                     rows("SELECT d.label, sum(d.total), sum(d.events) FROM (SELECT CASE WHEN day >= "
                          "(SELECT min(created_at AT TIME ZONE 'UTC')::date FROM outbox) THEN '<creation day>' "
                          "ELSE day::text END AS label, day, total, events FROM daily_totals_v1) d "
                          "GROUP BY d.label ORDER BY min(d.day)")));

  // Excluded: id and committed_at.
  check_golden("batch_ledger.tsv",
               table("pipeline\trun_id\tbatch_no\tsource\tstart_position\tend_position\tinput\tinserted\tupdated\t"
                     "unchanged\tstale\tsuperseded\tduplicate\tinvalid\tconflict",
                     rows("SELECT pipeline, run_id, batch_no, source, start_position, end_position, input, inserted, "
                          "updated, unchanged, stale, superseded, duplicate, invalid, conflict FROM batch_ledger "
                          "ORDER BY run_id, batch_no")));
  // Excluded: updated_at.
  check_golden("checkpoint.tsv", table("pipeline\tsource\tposition\trun_id",
                                       rows("SELECT pipeline, source, position, run_id FROM checkpoint "
                                            "ORDER BY pipeline, source")));
}

}  // namespace
}  // namespace tidemark
