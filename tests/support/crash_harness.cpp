#include "tests/support/crash_harness.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "pipeline/core/utf8.hpp"

namespace tidemark::testing {

namespace {

using namespace std::chrono_literals;

constexpr char kSecret[] = "whsec_dGlkZW1hcmstY3Jhc2gtdGVzdA==";
constexpr char kSecretEnv[] = "TIDEMARK_CRASH_TEST_SECRET";
const std::vector<std::string> kDestinations = {"audit", "ledger"};
constexpr auto kDeadline = 60s;
constexpr char kSourceUrlEnv[] = "TIDEMARK_CRASH_SOURCE_URL";

std::string describe_failure(const std::string& what, const ProcessResult& result) {
  return what + " exited " + std::to_string(result.exit_code) + (result.timed_out ? " (timed out)" : "") +
         "\nstdout:\n" + result.out + "\nstderr:\n" + result.err;
}

}  // namespace

bool long_tests_enabled() {
  const char* value = std::getenv("TIDEMARK_LONG_TESTS");
  return value != nullptr && std::string(value) == "1";
}

CrashHarness::CrashHarness(std::uint64_t seed, const WorkloadSize& size, const oracle::EntitySpec& entity,
                           WorkloadSource source)
    : CrashHarness(generate_workload(seed, size, entity), entity, nullptr, source) {}

CrashHarness::CrashHarness(const HarnessSource& source)
    : CrashHarness(source.workload, oracle::transaction_entity(), &source, WorkloadSource::kFiles) {}

CrashHarness::CrashHarness(Workload workload, const oracle::EntitySpec& entity, const HarnessSource* harness_source,
                           WorkloadSource source)
    : entity_(entity),
      source_yaml_(harness_source ? harness_source->yaml : ""),
      pipeline_(entity.legacy ? "transactions" : entity.name + "_load"),
      workload_(std::move(workload)),
      folder_(std::filesystem::temp_directory_path() /
              ("tidemark-crash-" + std::to_string(getpid()) + "-" + std::to_string(workload_.seed) + "-" +
               std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()))),
      receiver_(kSecret),
      expected_(oracle::expect(entity, workload_.files, workload_.batch_size, kDestinations)),
      source_(source) {
  if (harness_source && harness_source->translate) harness_source->translate(expected_);
  write_workload(workload_, folder_ / "in");
  if (source_ == WorkloadSource::kPostgresTable) load_postgres_table();
  std::ofstream config(folder_ / "config.yaml");
  config << oracle::declaration_yaml(entity) << "pipelines:\n"
         << "  " << pipeline_ << ":\n"
         << (entity.legacy ? "" : "    entity: " + entity.name + "\n")
         // The workload's files are complete, some with a last line that has no newline: it is
         // a record at once, not after source.settle.
         << "    source: "
         << (source_ == WorkloadSource::kPostgresTable
                 ? std::string("{kind: postgres, url_env: ") + kSourceUrlEnv +
                       ", table: workload, cursor: [seq], consistency: snapshot}"
             : source_yaml_.empty() ? "{kind: file, path: " + (folder_ / "in").string() + ", format: csv, settle: 0s}"
                                    : source_yaml_)
         << "\n"
         << "    batch_size: " << workload_.batch_size << "\n"
         << "    destinations:\n";
  for (const auto& destination : kDestinations) {
    config << "      - {name: " << destination << ", kind: http, url: " << receiver_.url()
           << ", secret_env: " << kSecretEnv << "}\n";
  }
  config << "relay: {max_attempts: 20, base_delay: 10ms, max_delay: 100ms, connect_timeout: 500ms, "
            "request_timeout: 500ms}\n";
}

CrashHarness::~CrashHarness() {
  std::error_code ignored;
  std::filesystem::remove_all(folder_, ignored);
}

std::uint64_t CrashHarness::records() const {
  std::uint64_t total = 0;
  for (auto count : expected_.totals) total += count;
  return total;
}

std::uint64_t CrashHarness::batches() const { return (records() + workload_.batch_size - 1) / workload_.batch_size; }

std::vector<std::string> CrashHarness::run_args() const {
  std::vector<std::string> args = {"run", "--pipeline", pipeline_, "--config", (folder_ / "config.yaml").string(),
                                   "--database", db_.url(), "--batch-size", std::to_string(workload_.batch_size),
                                   "--json"};
  if (source_ == WorkloadSource::kFiles && source_yaml_.empty()) {
    args.insert(args.end(), {"--source", (folder_ / "in").string(), "--format", "csv"});
  }
  return args;
}

void CrashHarness::load_postgres_table() {
  source_database_ = std::make_unique<TestDatabase>();
  std::vector<std::string> columns = {entity_.key, entity_.revision};
  for (const auto& field : entity_.fields) columns.push_back(field.name);
  auto connection = source_database_->connect();
  pqxx::work txn(*connection);
  std::string create = "CREATE TABLE workload (seq bigint PRIMARY KEY";
  std::string header;
  for (const auto& column : columns) {
    create += ", " + txn.quote_name(column) + " text";
    header += (header.empty() ? "" : ",") + oracle::csv_field(column);
  }
  txn.exec(create + ")");
  // The oracle predicts the table's rows as one CSV file of the same records in the same order.
  std::string csv = header + "\n";
  std::int64_t seq = 0;
  for (const auto& record : oracle::well_formed_records(workload_.files)) {
    std::vector<std::string> values;
    bool storable = true;
    for (const auto& column : columns) {
      const auto found = record.find(column);
      values.push_back(found == record.end() ? "" : found->second);
      bool changed = false;
      pipeline::storable_text(values.back(), changed);
      storable = storable && !changed;  // a text column holds no NUL and no invalid UTF-8
    }
    if (!storable) continue;
    std::string insert = "INSERT INTO workload VALUES (" + std::to_string(++seq);
    std::string line;
    for (std::size_t i = 0; i < values.size(); ++i) {
      insert += ", " + (values[i].empty() ? std::string("NULL") : txn.quote(values[i]));
      line += (i > 0 ? "," : "") + oracle::csv_field(values[i]);
    }
    txn.exec(insert + ")");
    csv += line + "\n";
  }
  txn.commit();
  expected_ = oracle::expect(entity_, {{"workload.csv", csv}}, workload_.batch_size, kDestinations);
  expected_.checkpoint = seq > 0 ? "[\"" + std::to_string(seq) + "\"]" : "";
  for (auto& entry : expected_.quarantine) entry.raw.clear(), entry.position.clear();
  std::sort(expected_.quarantine.begin(), expected_.quarantine.end());
}

oracle::Outcome CrashHarness::observed() const {
  oracle::Outcome actual = oracle::observe(db_.url(), pipeline_, entity_);
  if (source_ == WorkloadSource::kPostgresTable) {
    for (auto& entry : actual.quarantine) entry.raw.clear(), entry.position.clear();
    std::sort(actual.quarantine.begin(), actual.quarantine.end());
  }
  return actual;
}

std::vector<std::string> CrashHarness::relay_args() const {
  return {"relay", "--once", "--config", (folder_ / "config.yaml").string(), "--database", db_.url()};
}

ProcessOptions CrashHarness::options(const std::string& failpoints) const {
  ProcessOptions options;
  options.env[kSecretEnv] = kSecret;
  if (!failpoints.empty()) options.env["TIDEMARK_FAILPOINTS"] = failpoints;
  if (source_database_) options.env[kSourceUrlEnv] = source_database_->url();
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(kDeadline);
  return options;
}

bool CrashHarness::all_delivered() const {
  return db_.scalar("SELECT count(*) FROM outbox WHERE status <> 'delivered'") == "0";
}

int CrashHarness::run_until_done(const std::string& failpoints, int armed_runs, std::string& error) {
  int crashes = 0;
  for (int attempt = 0; attempt < armed_runs + 20; ++attempt) {
    const bool armed = attempt < armed_runs && !failpoints.empty();
    const ProcessResult result = run_tidemark(run_args(), options(armed ? failpoints : ""));
    if (result.exit_code == 0) return crashes;
    if (!(armed && result.exit_code == 137)) {
      error = describe_failure(std::string(armed ? "armed" : "clean") + " run", result);
      return crashes;
    }
    ++crashes;
    if (!db_.await_sessions_ended(result.pid)) {
      error = "the database sessions of a crashed run did not end";
      return crashes;
    }
  }
  error = "the run never completed";
  return crashes;
}

int CrashHarness::relay_until_delivered(const std::string& failpoints, int armed_runs, std::string& error) {
  int crashes = 0;
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  for (int attempt = 0; std::chrono::steady_clock::now() < deadline; ++attempt) {
    const bool armed = attempt < armed_runs && !failpoints.empty();
    const ProcessResult result = run_tidemark(relay_args(), options(armed ? failpoints : ""));
    if (armed && result.exit_code == 137) {
      ++crashes;
      if (!db_.await_sessions_ended(result.pid)) {
        error = "the database sessions of a crashed relay did not end";
        return crashes;
      }
      continue;
    }
    if (result.exit_code != 0) {
      error = describe_failure("relay", result);
      return crashes;
    }
    if (all_delivered()) return crashes;
    // Rows claimed by a killed relay stay leased (2 s at least) before they are due again.
    std::this_thread::sleep_for(200ms);
  }
  error = "the outbox was not delivered within the deadline";
  return crashes;
}

namespace {

// Starts `args` `kills` times and SIGKILLs each after a random delay; counts the kills that
// hit a running process. A process that exits by itself must exit 0.
int kill_repeatedly(const TestDatabase& db, const std::vector<std::string>& args, const ProcessOptions& options,
                    int kills, int max_delay_ms, std::mt19937_64& rng, std::string& error) {
  int killed = 0;
  // A process that ended before its kill narrows the window for the next: on a fast machine
  // a whole run can take less than max_delay_ms, and a kill that never lands proves nothing.
  int window_ms = max_delay_ms;
  for (int k = 0; k < kills && error.empty(); ++k) {
    auto process = start_tidemark(args, options);
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, window_ms)(rng)));
    const bool was_running = process->running();
    if (was_running) {
      process->kill(SIGKILL);
    } else {
      window_ms = std::max(window_ms / 2, 1);
    }
    const ProcessResult result = process->wait();
    if (was_running && result.exit_code == 137) {
      ++killed;
      if (!db.await_sessions_ended(result.pid)) error = "the database sessions of a killed process did not end";
    } else if (result.exit_code != 0) {
      error = describe_failure("killed process", result);
    }
  }
  return killed;
}

}  // namespace

int CrashHarness::kill_runs_until_done(int kills, int max_delay_ms, std::mt19937_64& rng, std::string& error) {
  const int killed = kill_repeatedly(db_, run_args(), options(""), kills, max_delay_ms, rng, error);
  if (error.empty()) run_until_done("", 0, error);
  return killed;
}

int CrashHarness::kill_relays_until_delivered(int kills, int max_delay_ms, std::mt19937_64& rng, std::string& error) {
  const int killed = kill_repeatedly(db_, relay_args(), options(""), kills, max_delay_ms, rng, error);
  if (error.empty()) relay_until_delivered("", 0, error);
  return killed;
}

std::string CrashHarness::verify() const {
  std::ostringstream diff;
  oracle::Outcome actual = observed();
  for (std::size_t i = 0; i < actual.totals.size(); ++i) actual.totals[i] -= replayed_[i];
  diff << oracle::compare(expected_, actual);
  // The receiver applied each expected event exactly once, and nothing else.
  std::map<std::string, int> applied;
  for (const auto& request : receiver_.requests()) {
    if (request.applied) ++applied[request.key];
    if (!request.signature_valid) diff << "receiver: bad signature on " << request.key << "\n";
  }
  const std::set<std::string> expected_keys(expected_.outbox_keys.begin(), expected_.outbox_keys.end());
  for (const auto& key : expected_keys) {
    if (!applied.contains(key)) diff << "receiver: " << key << " never applied\n";
  }
  for (const auto& [key, times] : applied) {
    if (!expected_keys.contains(key)) diff << "receiver: unexpected " << key << "\n";
    if (times != 1) diff << "receiver: " << key << " applied " << times << " times\n";
  }
  return diff.str();
}

std::string CrashHarness::replay_and_verify() {
  std::vector<std::string> args = run_args();
  args.push_back("--replay");
  const ProcessResult result = run_tidemark(args, options(""));
  if (result.exit_code != 0) return describe_failure("replay", result);
  // The summary is stdout's last line (a position may hold braces of its own).
  const auto end = result.out.find_last_not_of('\n');
  const auto newline = end == std::string::npos ? end : result.out.rfind('\n', end);
  const std::string last_line =
      end == std::string::npos ? "" : result.out.substr(newline == std::string::npos ? 0 : newline + 1, end - newline);
  if (!last_line.starts_with("{")) return describe_failure("replay without a --json summary", result);
  for (std::size_t i = 0; i < replayed_.size(); ++i) {
    const std::string field = "\"" + std::string(oracle::kOutcomes[i]) + "\":";
    const auto at = last_line.find(field);
    if (at == std::string::npos) return "replay summary lacks " + field + ": " + last_line;
    replayed_[i] += std::stoull(last_line.substr(at + field.size()));
  }
  // A replay accepts nothing new, so it adds no outbox row to deliver and nothing to state.
  if (replayed_[0] != 0 || replayed_[1] != 0) return "replay accepted changes: " + last_line;
  return verify();
}

oracle::Tally CrashHarness::tally() const { return oracle::tally(expected_, observed()); }

}  // namespace tidemark::testing
