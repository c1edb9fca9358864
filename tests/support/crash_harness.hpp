#pragma once
// One crash scenario end to end: a seeded workload in a folder, a fresh database, a webhook
// receiver for two destinations, real `tidemark run` and `tidemark relay --once` processes
// that are crashed (failpoints, SIGKILL) and restarted until done, and the comparison of
// everything they left behind with the independent oracle.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tests/support/oracle.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_database.hpp"
#include "tests/support/test_receiver.hpp"
#include "tests/support/workload.hpp"

namespace tidemark::testing {

// TIDEMARK_LONG_TESTS=1 turns on the long variants of the crash and kill tests.
bool long_tests_enabled();

// Where the pipeline reads the workload: its folder of CSV files, or a table of another
// database holding the same records (those the oracle reads as well formed, each column as
// text, an empty field as NULL), read by a `kind: postgres` source.
enum class WorkloadSource { kFiles, kPostgresTable };

// A source other than the workload's CSV folder (an HTTP API, say) for the built-in entity:
// the YAML of its `source:`, the records it serves written as the CSV files the oracle
// predicts from (the same records in the same order), and how the prediction's
// source-specific parts (quarantine positions and raw texts, the checkpoint) read for it.
struct HarnessSource {
  std::string yaml;
  Workload workload;
  std::function<void(oracle::Outcome&)> translate;
};

class CrashHarness {
 public:
  // The pipeline loads `entity`: the built-in one, or a declaration the config file carries.
  CrashHarness(std::uint64_t seed, const WorkloadSize& size,
               const oracle::EntitySpec& entity = oracle::transaction_entity(),
               WorkloadSource source = WorkloadSource::kFiles);
  explicit CrashHarness(const HarnessSource& source);
  ~CrashHarness();
  CrashHarness(const CrashHarness&) = delete;
  CrashHarness& operator=(const CrashHarness&) = delete;

  std::uint64_t seed() const { return workload_.seed; }
  const oracle::Outcome& expected() const { return expected_; }
  std::uint64_t batches() const;
  std::uint64_t records() const;

  // Runs the pipeline with TIDEMARK_FAILPOINTS=`failpoints` for at most `armed_runs` runs
  // (each must exit 0 or 137), then without, until a run exits 0. Returns the crashes seen;
  // "" in `error` unless a run failed otherwise.
  int run_until_done(const std::string& failpoints, int armed_runs, std::string& error);
  // The same for the relay, until every outbox row is delivered.
  int relay_until_delivered(const std::string& failpoints, int armed_runs, std::string& error);
  // Runs the pipeline in the background and SIGKILLs it after a random delay in
  // [0, max_delay_ms], `kills` times (a run that finishes first is not counted), then lets a
  // run finish. Returns the processes killed while running.
  int kill_runs_until_done(int kills, int max_delay_ms, std::mt19937_64& rng, std::string& error);
  int kill_relays_until_delivered(int kills, int max_delay_ms, std::mt19937_64& rng, std::string& error);

  // The database and the receiver against the oracle: "" when everything agrees.
  std::string verify() const;
  // Runs a --replay of the whole source, then verify(): a replay may add ledger rows (the
  // totals expected are then the oracle's plus the replay's own summary) but nothing else.
  std::string replay_and_verify();
  oracle::Tally tally() const;
  const TestDatabase& database() const { return db_; }

 private:
  std::vector<std::string> run_args() const;
  std::vector<std::string> relay_args() const;
  ProcessOptions options(const std::string& failpoints) const;
  bool all_delivered() const;
  // Loads the workload into source_database_ and predicts its outcome (kPostgresTable).
  void load_postgres_table();
  // What the database holds; for a postgres source, quarantine entries without their raw
  // text and position (a row's JSON object and cursor, not the CSV line the oracle knows).
  oracle::Outcome observed() const;

  CrashHarness(Workload workload, const oracle::EntitySpec& entity, const HarnessSource* harness_source,
               WorkloadSource source);

  const oracle::EntitySpec& entity_;
  std::string source_yaml_;  // a HarnessSource's; "" otherwise
  std::string pipeline_;
  Workload workload_;
  std::filesystem::path folder_;
  TestDatabase db_;
  TestReceiver receiver_;
  oracle::Outcome expected_;
  oracle::Totals replayed_{};  // ledger counts added by replays
  WorkloadSource source_;
  std::unique_ptr<TestDatabase> source_database_;  // kPostgresTable only
};

}  // namespace tidemark::testing
