// The NATS JetStream source: real tidemark processes, a real nats-server with
// JetStream (tests/support/nats_server.hpp) and a throwaway PostgreSQL. `nats setup` creates
// the partitions' streams and reports an existing one that differs (exit 2); `nats mapping`
// prints a block the server accepts and that spreads keys over the partitions; a run drains
// every partition and ends equal to an independent model of the revision rule, whichever
// partition each version of a key went to; kills (a failpoint's _exit and a real SIGKILL)
// lose nothing and load nothing twice; a purged or a deleted-and-recreated stream is refused
// unless --accept-gap. ServeNats: `serve` consumes the partitions continuously, shares them
// with another serve process, and counts a refused partition while the others go on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "connectors/nats/connection.hpp"
#include "connectors/nats/position.hpp"
#include "connectors/nats/streams.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/nats_server.hpp"
#include "tests/support/process.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark {
namespace {

using connectors::nats::Connection;
using testing::NatsServer;
using testing::ProcessOptions;
using testing::ProcessResult;
using testing::Rows;
using testing::TempDir;
using testing::TestDatabase;
using testing::query_rows;
using testing::run_tidemark;
using ::testing::HasSubstr;

constexpr int kPartitions = 4;
constexpr char kPipeline[] = "orders_nats";

// A message body: one order version, its amount derived from both so that any mix-up shows.
std::string order(int key, int version) {
  return R"({"order_id": "o)" + std::to_string(key) + R"(", "version": )" + std::to_string(version) +
         R"(, "amount": ")" + std::to_string(key) + "." + std::to_string(10 + version) + "\"}";
}

// The model: each key ends at its highest revision (docs/rules.md), whatever the order or
// partition its versions arrived in. Shares no code with the pipeline.
class Oracle {
 public:
  void published(int key, int version) {
    int& highest = highest_[key];
    highest = std::max(highest, version);
  }
  Rows rows() const {
    std::map<std::string, std::vector<std::string>> sorted;  // by order_id as text, as the query sorts
    for (const auto& [key, version] : highest_) {
      sorted["o" + std::to_string(key)] = {"o" + std::to_string(key), std::to_string(version),
                                           std::to_string(key) + "." + std::to_string(10 + version)};
    }
    Rows rows;
    for (auto& [id, row] : sorted) rows.push_back(std::move(row));
    return rows;
  }

 private:
  std::map<int, int> highest_;
};

class NatsSource : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::nats_server_program().empty()) GTEST_SKIP() << "nats-server is not installed (Debian nats-server)";
    start_servers();
  }
  // One server; the clustered tests start three instead.
  virtual void start_servers() {
    server_ = std::make_unique<NatsServer>();
    servers_ = {server_->url()};
    nats_ = std::make_unique<Connection>(servers_);
  }

  std::string config(const std::string& extra_source = "") const {
    return "entities:\n"
           "  orders:\n"
           "    key: order_id\n"
           "    revision: version\n"
           "    fields:\n"
           "      amount: {type: decimal, precision: 14, scale: 2, required: true}\n"
           "pipelines:\n"
           "  orders_nats:\n"
           "    entity: orders\n"
           "    source: {kind: nats, servers: [" + servers_list() + "], stream: ORDERS, partitions: " +
           std::to_string(kPartitions) + ", format: jsonl" + extra_source + "}\n"
           "    batch_size: 50\n";
  }

  std::string servers_list() const {
    std::string list;
    for (const auto& server : servers_) list += (list.empty() ? "" : ", ") + server;
    return list;
  }

  ProcessResult tidemark(std::vector<std::string> args, const std::string& yaml, ProcessOptions options = {}) const {
    const auto file = dir_.write("config.yaml", yaml);
    args.insert(args.end(), {"--config", file.string()});
    if (args[0] == "run") args.insert(args.end(), {"--database", db_.url()});
    return run_tidemark(args, options);
  }
  ProcessResult setup(const std::string& yaml) const { return tidemark({"nats", "setup", "--pipeline", kPipeline}, yaml); }
  ProcessResult run(std::vector<std::string> extra = {}, ProcessOptions options = {}) const {
    std::vector<std::string> args{"run", "--pipeline", kPipeline, "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return tidemark(args, config(), options);
  }

  void publish(int partition, int key, int version) {
    nats_->publish("ORDERS." + std::to_string(partition) + ".o" + std::to_string(key), order(key, version));
    oracle_.published(key, version);
    ++published_;
  }
  // The randomised tests' generator: a fixed seed, or TIDEMARK_TEST_SEED's, named in the trace
  // of every failure of the test.
  std::mt19937& random() {
    if (!random_) {
      const char* given = std::getenv("TIDEMARK_TEST_SEED");
      const unsigned seed = given != nullptr ? static_cast<unsigned>(std::stoul(given)) : 1612;
      trace_.emplace(__FILE__, __LINE__, "seed " + std::to_string(seed) + " (set TIDEMARK_TEST_SEED to repeat another)");
      random_.emplace(seed);
    }
    return *random_;
  }
  // `count` versions of random keys to random partitions.
  void publish_random(int count, int keys) {
    std::mt19937& random = this->random();
    std::uniform_int_distribution<int> partition(0, kPartitions - 1);
    std::uniform_int_distribution<int> key(0, keys - 1);
    std::uniform_int_distribution<int> version(1, 20);
    for (int i = 0; i < count; ++i) publish(partition(random), key(random), version(random));
  }

  Rows table() const { return query_rows(db_, "SELECT order_id, version::text, amount::text FROM orders ORDER BY order_id"); }
  std::string ledger_input() const {
    return query_rows(db_, "SELECT coalesce(sum(input), 0)::text FROM batch_ledger WHERE pipeline = 'orders_nats'")[0][0];
  }
  // Each partition's checkpoint as it must be once everything is loaded: the stream's last
  // sequence and creation time.
  Rows drained_checkpoints() {
    Rows rows;
    for (int k = 0; k < kPartitions; ++k) {
      const std::string stream = "ORDERS_" + std::to_string(k);
      const auto info = stream_info(stream);
      rows.push_back({stream, std::to_string(info.last_sequence) + "@" + connectors::nats::format_created(info.created)});
    }
    return rows;
  }
  // ORDERS_1 loses two messages after its checkpoint: the partitions are made by hand without
  // DenyPurge (as another tool may make them), a run loads eight records, two more are
  // published and purged before any run loads them, then o102 is published. JetStream would
  // start a consumer at the stream's first sequence and skip the two unnoticed.
  void purge_after_the_checkpoint() {
    connectors::nats::NatsSourceOptions options;
    options.stream = "ORDERS";
    for (int k = 0; k < kPartitions; ++k) {
      connectors::nats::StreamSpec spec = connectors::nats::partition_spec(options, k);
      spec.deny_purge = false;
      nats_->add_stream(spec);
    }
    for (int key = 0; key < 8; ++key) publish(key % kPartitions, key, 1);
    ASSERT_EQ(run().exit_code, 0);
    nats_->publish("ORDERS.1.o100", order(100, 1));
    nats_->publish("ORDERS.1.o101", order(101, 1));
    nats_->purge_stream("ORDERS_1");
    publish(1, 102, 1);
  }

  // A stream's info; asked again while a cluster elects its leader (no answer meanwhile).
  connectors::nats::StreamInfo stream_info(const std::string& stream) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
      try {
        return nats_->stream_info(stream).value();
      } catch (const connectors::nats::NatsError&) {
        if (std::chrono::steady_clock::now() >= deadline) throw;
      }
    }
  }
  Rows checkpoints() const {
    return query_rows(db_, "SELECT source, position FROM checkpoint WHERE pipeline = 'orders_nats' ORDER BY source");
  }
  // Everything published is in the table as the model says, each sequence entered the ledger once.
  void expect_everything_loaded_once() {
    EXPECT_EQ(table(), oracle_.rows());
    EXPECT_EQ(ledger_input(), std::to_string(published_));
    EXPECT_EQ(checkpoints(), drained_checkpoints());
  }

  TestDatabase db_;
  TempDir dir_;
  std::unique_ptr<NatsServer> server_;
  std::vector<std::string> servers_;
  std::optional<::testing::ScopedTrace> trace_;
  std::optional<std::mt19937> random_;
  std::unique_ptr<Connection> nats_;
  Oracle oracle_;
  int published_ = 0;
};

// Workers (docs/scale-out.md "Workers"): `run` processes share the partitions through
// PostgreSQL. A short owner timeout so that a killed worker's partitions are taken soon.
constexpr char kFastWorkers[] = ", owner_timeout: 2s, rebalance_interval: 500ms";

// Polls the database (or serve) for an event, up to a minute.
template <typename Condition>
void wait_until(Condition condition, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!condition()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "still waiting: " << what;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Waits until every worker of the pipeline is dead (a killed one as soon as PostgreSQL has ended
// its sessions; a stopped one once silent for the 2 s owner timeout): their partitions can then
// be taken.
void wait_until_no_live_worker(const TestDatabase& db) {
  wait_until([&] { return db.scalar("SELECT count(*) FROM tidemark_workers WHERE tidemark_worker_alive(id, 2000)") == "0"; },
             "every worker dead (a worker still beats)");
}

// Waits for the next commit after `before` batches (the event is a commit).
void wait_for_commit_after(const TestDatabase& db, const std::string& before) {
  wait_until([&] { return db.scalar("SELECT count(*) FROM batch_ledger") != before; }, "a batch committed");
}

TEST_F(NatsSource, SetupCreatesEachPartitionStreamAndAgainFindsThemAsConfigured) {
  const auto first = setup(config(", duplicate_window: 5m"));
  ASSERT_EQ(first.exit_code, 0) << first.both();
  for (int k = 0; k < kPartitions; ++k) {
    EXPECT_THAT(first.out, HasSubstr("stream ORDERS_" + std::to_string(k) + ": created"));
    const auto info = nats_->stream_info("ORDERS_" + std::to_string(k));
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->subjects, std::vector<std::string>{"ORDERS." + std::to_string(k) + ".>"});
    EXPECT_TRUE(info->file_storage);
    EXPECT_TRUE(info->limits_retention);
    EXPECT_EQ(info->replicas, 1);
    EXPECT_TRUE(info->deny_delete);
    EXPECT_TRUE(info->deny_purge);
    EXPECT_EQ(info->duplicate_window_ns, 300'000'000'000);
  }
  const auto again = setup(config(", duplicate_window: 5m"));
  EXPECT_EQ(again.exit_code, 0) << again.both();
  EXPECT_THAT(again.out, HasSubstr("stream ORDERS_3: exists as configured"));
}

TEST_F(NatsSource, SetupReportsAnExistingStreamThatDiffersAndLeavesItAsItIs) {
  // ORDERS_2 made by hand without DenyPurge and with the default window.
  connectors::nats::NatsSourceOptions options;
  options.stream = "ORDERS";
  connectors::nats::StreamSpec spec = connectors::nats::partition_spec(options, 2);
  spec.deny_purge = false;
  nats_->add_stream(spec);

  const auto result = setup(config(", duplicate_window: 5m"));
  EXPECT_EQ(result.exit_code, 2) << result.both();
  EXPECT_THAT(result.out, HasSubstr("stream ORDERS_2: exists and differs from the configuration (left as it is):\n"
                                    "  deny_purge: false, configured true (can be set, never unset)\n"
                                    "  duplicate_window: 120s, configured 300s\n"));
  EXPECT_THAT(result.out, HasSubstr("stream ORDERS_0: created"));
  EXPECT_THAT(result.err, HasSubstr("1 stream(s) differ"));
  const auto kept = nats_->stream_info("ORDERS_2").value();
  EXPECT_FALSE(kept.deny_purge);
  EXPECT_EQ(kept.duplicate_window_ns, 120'000'000'000);
}

TEST_F(NatsSource, MappingPrintsABlockTheServerAcceptsThatSpreadsKeysOverThePartitions) {
  const auto result = tidemark({"nats", "mapping", "--pipeline", kPipeline}, config());
  ASSERT_EQ(result.exit_code, 0) << result.both();
  EXPECT_EQ(result.out, "mappings {\n  \"ORDERS.in.*\": \"ORDERS.{{partition(4,1)}}.{{wildcard(1)}}\"\n}\n");

  // A server configured with it: producers publish to ORDERS.in.<key>.
  NatsServer mapped(result.out);
  Connection producer({mapped.url()});
  connectors::nats::NatsSourceOptions options;
  options.stream = "ORDERS";
  for (int k = 0; k < kPartitions; ++k) producer.add_stream(connectors::nats::partition_spec(options, k));
  constexpr int kKeys = 200;
  for (int key = 0; key < kKeys; ++key) producer.publish("ORDERS.in.o" + std::to_string(key), order(key, 1));
  std::uint64_t total = 0;
  int used = 0;
  for (int k = 0; k < kPartitions; ++k) {
    const auto messages = producer.stream_info("ORDERS_" + std::to_string(k)).value().messages;
    total += messages;
    used += messages > 0 ? 1 : 0;
  }
  EXPECT_EQ(total, static_cast<std::uint64_t>(kKeys));
  EXPECT_EQ(used, kPartitions) << "200 keys hashed onto fewer than 4 partitions";
}

TEST_F(NatsSource, ARunDrainsEveryPartitionEqualToTheModelAndASecondLoadsNothing) {
  ASSERT_EQ(setup(config()).exit_code, 0);
  publish_random(600, 150);  // the versions of a key spread over the partitions

  const auto first = run();
  ASSERT_EQ(first.exit_code, 0) << first.both();
  EXPECT_THAT(first.out, HasSubstr("\"input\":600"));
  const Rows drained = drained_checkpoints();
  for (const auto& row : drained) {
    EXPECT_THAT(first.out, HasSubstr("\"" + row[0] + "\":\"" + row[1] + "\"")) << "--json checkpoint by stream";
  }
  expect_everything_loaded_once();

  const auto second = run();
  ASSERT_EQ(second.exit_code, 0) << second.both();
  EXPECT_THAT(second.out, HasSubstr("\"input\":0"));
  expect_everything_loaded_once();

  // What is published later is loaded by the next run, from each partition's checkpoint on.
  publish_random(100, 150);
  const auto third = run();
  ASSERT_EQ(third.exit_code, 0) << third.both();
  EXPECT_THAT(third.out, HasSubstr("\"input\":100"));
  expect_everything_loaded_once();
}

TEST_F(NatsSource, OneKeyPublishedToTwoPartitionsEndsAtItsHighestRevision) {
  ASSERT_EQ(setup(config()).exit_code, 0);
  // Partition 0 is loaded first: the newer revision arrives before the older one.
  publish(0, 1, 5);
  publish(3, 1, 2);
  publish(1, 2, 1);
  publish(2, 2, 3);
  publish(3, 2, 3);  // the same revision and payload in another partition (another batch): unchanged
  const auto result = run();
  ASSERT_EQ(result.exit_code, 0) << result.both();
  EXPECT_THAT(result.out, HasSubstr("\"stale\":1"));
  EXPECT_THAT(result.out, HasSubstr("\"unchanged\":1"));
  expect_everything_loaded_once();
  EXPECT_EQ(table(), (Rows{{"o1", "5", "1.15"}, {"o2", "3", "2.13"}}));
}

TEST_F(NatsSource, AMessageThatIsNotARecordIsQuarantinedWithItsStreamAndSequence) {
  ASSERT_EQ(setup(config()).exit_code, 0);
  publish(1, 1, 1);
  nats_->publish("ORDERS.1.bad", "{\"order_id\": \"o9\", \"version\": 1, \"amount\": \"x\"}");
  nats_->publish("ORDERS.1.bad", "not json");
  const auto result = run();
  ASSERT_EQ(result.exit_code, 0) << result.both();
  EXPECT_THAT(result.out, HasSubstr("\"invalid\":2"));
  EXPECT_EQ(query_rows(db_, "SELECT position, raw FROM quarantine ORDER BY id"),
            (Rows{{"ORDERS_1 sequence 2:1 (byte 0)", "{\"order_id\": \"o9\", \"version\": 1, \"amount\": \"x\"}"},
                  {"ORDERS_1 sequence 3:1 (byte 0)", "not json"}}));
}

TEST_F(NatsSource, KilledRunsResumeWithNothingLostAndNothingLoadedTwice) {
  ASSERT_EQ(setup(config()).exit_code, 0);
  publish_random(2000, 300);
  // Each run dies at its Nth commit as kill -9 would (no destructors, no flushing): in the
  // middle of a partition, and the next run goes on from the checkpoints.
  for (const char* failpoint : {"after_commit:7", "after_commit:13", "after_commit:2"}) {
    SCOPED_TRACE(std::string("TIDEMARK_FAILPOINTS=") + failpoint);
    ProcessOptions options;
    options.env["TIDEMARK_FAILPOINTS"] = failpoint;
    const auto killed = run({}, options);
    ASSERT_EQ(killed.exit_code, 137) << killed.both();
    wait_until_no_live_worker(db_);  // the killed worker's partitions are free once its sessions end
  }
  // A real SIGKILL from outside, once the run has committed a batch of its own.
  const std::string before = db_.scalar("SELECT count(*) FROM batch_ledger");
  const auto file = dir_.write("config.yaml", config());
  auto process = testing::start_tidemark(
      {"run", "--pipeline", kPipeline, "--config", file.string(), "--database", db_.url()});
  wait_until([&] { return !process->running() || db_.scalar("SELECT count(*) FROM batch_ledger") != before; },
             "a batch committed, or the run ended");
  process->kill(SIGKILL);
  process->wait();
  wait_until_no_live_worker(db_);

  const auto last = run();
  ASSERT_EQ(last.exit_code, 0) << last.both();
  expect_everything_loaded_once();
}

TEST_F(NatsSource, APurgedStreamIsRefusedUnlessTheGapIsAccepted) {
  ASSERT_NO_FATAL_FAILURE(purge_after_the_checkpoint());

  const auto refused = run();
  EXPECT_EQ(refused.exit_code, 1) << refused.both();
  EXPECT_THAT(refused.err, HasSubstr("partition ORDERS_1 refused: its first sequence is 5 but the next to load is 3: "
                                     "2 message(s) were removed"));
  EXPECT_THAT(refused.err, HasSubstr("--accept-gap"));
  EXPECT_EQ(query_rows(db_, "SELECT position FROM checkpoint WHERE source = 'ORDERS_1'")[0][0].substr(0, 2), "2@");

  const auto accepted = run({"--accept-gap"});
  ASSERT_EQ(accepted.exit_code, 0) << accepted.both();
  EXPECT_THAT(accepted.err, HasSubstr("accepted (--accept-gap)"));
  EXPECT_EQ(table(), oracle_.rows());  // o100 and o101 are gone; o102 is loaded
  EXPECT_EQ(checkpoints(), drained_checkpoints());
}

TEST_F(NatsSource, ADeletedAndRecreatedStreamIsRefusedUnlessTheGapIsAccepted) {
  ASSERT_EQ(setup(config()).exit_code, 0);
  for (int key = 0; key < 8; ++key) publish(key % kPartitions, key, 1);
  ASSERT_EQ(run().exit_code, 0);
  const std::string old_checkpoint = query_rows(db_, "SELECT position FROM checkpoint WHERE source = 'ORDERS_2'")[0][0];
  nats_->delete_stream("ORDERS_2");
  ASSERT_EQ(setup(config()).exit_code, 0);
  // The new stream starts again at sequence 1: without the creation time in the checkpoint
  // its first messages would look loaded already.
  publish(2, 200, 1);
  publish(2, 201, 1);
  publish(2, 202, 1);

  const auto refused = run();
  EXPECT_EQ(refused.exit_code, 1) << refused.both();
  EXPECT_THAT(refused.err, HasSubstr("partition ORDERS_2 refused: the stream was created at"));
  EXPECT_THAT(refused.err, HasSubstr("deleted and created again"));
  EXPECT_EQ(query_rows(db_, "SELECT position FROM checkpoint WHERE source = 'ORDERS_2'")[0][0], old_checkpoint);

  const auto accepted = run({"--accept-gap"});
  ASSERT_EQ(accepted.exit_code, 0) << accepted.both();
  EXPECT_EQ(table(), oracle_.rows());
  EXPECT_EQ(checkpoints(), drained_checkpoints());
  EXPECT_EQ(ledger_input(), std::to_string(published_));
}

TEST_F(NatsSource, AcceptGapAppliesToNatsSourcesOnly) {
  const auto file = dir_.write("in.csv", "transaction_id,account_id,amount,currency,occurred_at,source_revision\n");
  const auto result = run_tidemark({"run", "--pipeline", "p", "--source", file.string(), "--database", db_.url(),
                                    "--accept-gap"});
  EXPECT_EQ(result.exit_code, 2) << result.both();
  EXPECT_THAT(result.err, HasSubstr("--accept-gap applies to nats sources only"));
}

TEST(NatsCli, EachCommandHasHelpAndAMistakeExitsTwo) {
  for (const std::vector<std::string>& command : std::vector<std::vector<std::string>>{
           {"nats", "--help"}, {"nats", "setup", "--help"}, {"nats", "mapping", "--help"}}) {
    const ProcessResult help = run_tidemark(command);
    EXPECT_EQ(help.exit_code, 0) << help.both();
    EXPECT_THAT(help.out, HasSubstr("Usage"));
  }
  EXPECT_THAT(run_tidemark({"nats", "setup", "--help"}).out, HasSubstr("never modified"));
  EXPECT_THAT(run_tidemark({"run", "--help"}).out, HasSubstr("--accept-gap"));
  EXPECT_EQ(run_tidemark({"nats"}).exit_code, 2);

  TempDir dir;
  const auto file = dir.write("config.yaml", "pipelines:\n  files:\n    source: {path: in.csv}\n"
                                             "  orders:\n    source: {kind: nats, servers: [nats://127.0.0.1:1], "
                                             "stream: ORDERS}\n");
  const auto not_nats = run_tidemark({"nats", "setup", "--pipeline", "files", "--config", file.string()});
  EXPECT_EQ(not_nats.exit_code, 2) << not_nats.both();
  EXPECT_THAT(not_nats.err, HasSubstr("pipeline files has neither a nats source nor a nats destination"));
  const auto mapping = run_tidemark({"nats", "mapping", "--pipeline", "files", "--config", file.string()});
  EXPECT_EQ(mapping.exit_code, 2) << mapping.both();
  EXPECT_THAT(mapping.err, HasSubstr("pipeline files reads a kind file source, not nats"));
  const auto unknown = run_tidemark({"nats", "mapping", "--pipeline", "nope", "--config", file.string()});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.both();
  EXPECT_THAT(unknown.err, HasSubstr("--pipeline nope: no such pipeline"));
  // Nothing listens on port 1: the server cannot be reached, a failure (exit 1) naming it.
  const auto unreachable = run_tidemark({"nats", "setup", "--pipeline", "orders", "--config", file.string()});
  EXPECT_EQ(unreachable.exit_code, 1) << unreachable.both();
  EXPECT_THAT(unreachable.err, HasSubstr("cannot connect to NATS at nats://127.0.0.1:1"));
}

TEST_F(NatsSource, WorkersRunningAtOnceAndKilledAtRandomLoadEverythingOnce) {
  ASSERT_EQ(setup(config()).exit_code, 0);
  const auto file = dir_.write("config.yaml", config(kFastWorkers));
  const std::vector<std::string> args{"run", "--pipeline", kPipeline, "--config", file.string(), "--database", db_.url()};
  // Rounds of three, two and three workers started at once on new messages; in each, one of
  // them is killed after a commit.
  for (int round = 0; round < 3; ++round) {
    publish_random(1500, 400);
    std::vector<std::unique_ptr<testing::Process>> workers;
    const std::string before = db_.scalar("SELECT count(*) FROM batch_ledger");
    for (int w = 0; w < (round == 1 ? 2 : 3); ++w) workers.push_back(testing::start_tidemark(args));
    wait_for_commit_after(db_, before);
    workers[std::uniform_int_distribution<std::size_t>(0, workers.size() - 1)(random())]->kill(SIGKILL);
    for (auto& worker : workers) worker->wait();
    wait_until_no_live_worker(db_);
  }
  const auto last = tidemark({"run", "--pipeline", kPipeline}, config(kFastWorkers));
  ASSERT_EQ(last.exit_code, 0) << last.both();
  expect_everything_loaded_once();
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM runs WHERE status = 'running'"), "0")
      << "the killed workers' runs are marked failed";
}

TEST_F(NatsSource, AStoppedWorkerIsTakenOverAndNeverCommitsAgainWhenItResumes) {
  ASSERT_EQ(setup(config()).exit_code, 0);
  publish_random(4000, 400);
  const auto file = dir_.write("config.yaml", config(kFastWorkers));
  const std::vector<std::string> args{"run", "--pipeline", kPipeline, "--config", file.string(), "--database",
                                      db_.url(), "--batch-size", "10"};
  auto stopped = testing::start_tidemark(args);
  wait_for_commit_after(db_, "0");
  stopped->kill(SIGSTOP);  // keeps its connections, perhaps inside a batch's transaction
  wait_until_no_live_worker(db_);

  const auto taker = tidemark({"run", "--pipeline", kPipeline}, config(kFastWorkers));
  ASSERT_EQ(taker.exit_code, 0) << taker.both();
  expect_everything_loaded_once();
  const auto ledger = db_.scalar("SELECT count(*) FROM batch_ledger");

  stopped->kill(SIGCONT);
  const auto resumed = stopped->wait();
  EXPECT_EQ(resumed.exit_code, 1) << resumed.both();
  EXPECT_THAT(resumed.err, HasSubstr("another worker took it"));
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM batch_ledger"), ledger) << "the resumed worker committed nothing";
  expect_everything_loaded_once();
}

// serve as a worker of the nats pipeline (docs/scale-out.md "serve consumes continuously").
class ServeNats : public NatsSource {
 protected:
  std::unique_ptr<testing::Process> start_serve(unsigned short port) {
    const auto file = dir_.write("serve.yaml", config(kFastWorkers));
    ProcessOptions options;
    options.env = {{"TIDEMARK_DATABASE_URL", db_.url()}};
    options.timeout = std::chrono::minutes(10);
    auto serve = testing::start_tidemark({"serve", "--config", file.string(), "--listen",
                                          "127.0.0.1:" + std::to_string(port)}, options);
    wait_until([&] { return testing::http_request(port, "GET", "/healthz", {}, "", std::chrono::seconds(1)).status == 200; },
               "serve answers /healthz");
    return serve;
  }

  void wait_until_loaded() {
    wait_until([&] { return ledger_input() == std::to_string(published_); }, "every message in the ledger");
  }
  // How many partitions each live worker owns, fewest first.
  std::vector<std::string> shares() const {
    std::vector<std::string> shares;
    for (const auto& row : query_rows(db_, "SELECT count(*)::text FROM tidemark_partitions WHERE owner IS NOT NULL "
                                           "GROUP BY owner ORDER BY 1")) {
      shares.push_back(row[0]);
    }
    return shares;
  }
  std::string runs() const { return db_.scalar("SELECT count(*) FROM runs"); }
};

TEST_F(ServeNats, LoadsWhatIsPublishedWhileItRunsAndAnIdlePartitionRecordsNoRun) {
  ASSERT_EQ(setup(config()).exit_code, 0);
  const unsigned short port = testing::free_port();
  auto serve = start_serve(port);
  publish_random(400, 60);
  wait_until_loaded();
  expect_everything_loaded_once();
  wait_until([&] { return db_.scalar("SELECT count(*) FROM runs WHERE status = 'running'") == "0"; }, "runs end");
  EXPECT_EQ(query_rows(db_, "SELECT DISTINCT trigger || ' ' || status FROM runs"), (Rows{{"stream succeeded"}}));

  // One message to partition 2: one run more, of ORDERS_2 alone; the idle partitions none.
  const std::string before = runs();
  publish(2, 1000, 1);
  wait_until_loaded();
  wait_until([&] { return db_.scalar("SELECT count(*) FROM runs WHERE status = 'running'") == "0"; }, "runs end");
  EXPECT_EQ(std::stoi(runs()), std::stoi(before) + 1);
  EXPECT_EQ(query_rows(db_, "SELECT DISTINCT source FROM batch_ledger WHERE run_id = (SELECT max(id) FROM runs)"),
            (Rows{{"ORDERS_2"}}));
  expect_everything_loaded_once();

  EXPECT_EQ(testing::metric_value(port, R"(tidemark_nats_partitions_owned{pipeline="orders_nats"})"), 4);
  EXPECT_EQ(testing::metric_value(port, R"(tidemark_runs_total{pipeline="orders_nats",status="succeeded",trigger="stream"})"),
            std::stod(runs()));
  serve->kill(SIGTERM);
  const auto stopped = serve->wait();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM tidemark_partitions WHERE owner IS NOT NULL"), "0")
      << "a stopped serve frees its partitions";
}

TEST_F(ServeNats, TwoServeProcessesShareThePartitionsAndOneTakesThemAllWhenTheOtherStops) {
  ASSERT_EQ(setup(config()).exit_code, 0);
  auto first = start_serve(testing::free_port());
  wait_until([&] { return shares() == std::vector<std::string>{"4"}; }, "the first serve owns every partition");
  auto second = start_serve(testing::free_port());
  // The first gives up its surplus at its next balance, the second takes it at its own.
  wait_until([&] { return shares() == std::vector<std::string>{"2", "2"}; }, "two partitions each");
  publish_random(300, 50);
  wait_until_loaded();
  EXPECT_EQ(db_.scalar("SELECT count(DISTINCT worker) FROM runs"), "2") << "both served partitions";

  first->kill(SIGTERM);
  EXPECT_EQ(first->wait().exit_code, 0);
  wait_until([&] { return shares() == std::vector<std::string>{"4"}; }, "the second serve owns every partition");
  publish_random(300, 50);
  wait_until_loaded();
  expect_everything_loaded_once();
  second->kill(SIGTERM);
  EXPECT_EQ(second->wait().exit_code, 0);
}

TEST_F(ServeNats, APurgedStreamIsRefusedAndCountedWhileTheOtherPartitionsGoOn) {
  ASSERT_NO_FATAL_FAILURE(purge_after_the_checkpoint());
  const unsigned short port = testing::free_port();
  auto serve = start_serve(port);
  const std::string refused = R"(tidemark_nats_partitions_refused_total{partition="1",pipeline="orders_nats"})";
  wait_until([&] { return testing::metric_value(port, refused) >= 1; }, "the refusal counted");
  EXPECT_EQ(query_rows(db_, "SELECT position FROM checkpoint WHERE source = 'ORDERS_1'")[0][0].substr(0, 2), "2@");
  EXPECT_NE(db_.scalar("SELECT count(*) FROM runs WHERE trigger = 'stream' AND status = 'failed' AND "
                       "error LIKE '%partition ORDERS_1 refused: its first sequence is 5%'"),
            "0");
  // The other partitions go on.
  publish(3, 300, 1);
  wait_until([&] { return db_.scalar("SELECT count(*) FROM orders WHERE order_id = 'o300'") == "1"; }, "o300 loaded");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM orders WHERE order_id = 'o102'"), "0") << "ORDERS_1 stays refused";
  serve->kill(SIGTERM);
  EXPECT_EQ(serve->wait().exit_code, 0);
}

// A 3-node JetStream cluster, streams with three replicas (docs/scale-out.md "What JetStream
// 2.9 promises"): a run goes on through a killed stream leader and a killed metadata leader.
class ClusteredNats : public NatsSource {
 protected:
  void start_servers() override {
    cluster_ = std::make_unique<testing::NatsCluster>(3);
    servers_ = cluster_->urls();
    // The test's own connection survives the kills too.
    connectors::nats::ConnectionOptions options;
    options.servers = servers_;
    options.reconnect = true;
    nats_ = std::make_unique<Connection>(options);
  }

  // Starts a run, kills `victim` (chosen once the first batch has committed), and expects the
  // run to end well with everything loaded once. Returns the longest pause between two of the
  // run's commits: the stall the failover cost.
  std::chrono::milliseconds run_through_a_kill(const std::function<testing::NatsNode&()>& victim) {
    const auto file = dir_.write("config.yaml", config(", replicas: 3"));
    const std::string last_run = db_.scalar("SELECT coalesce(max(id), 0) FROM runs");
    const std::string batches = db_.scalar("SELECT count(*) FROM batch_ledger");
    auto worker = testing::start_tidemark({"run", "--pipeline", kPipeline, "--config", file.string(), "--database",
                                           db_.url(), "--batch-size", "20", "--json"});
    wait_for_commit_after(db_, batches);
    testing::NatsNode& killed = victim();
    killed.kill();
    const auto result = worker->wait();
    EXPECT_EQ(result.exit_code, 0) << result.both();
    expect_everything_loaded_once();
    killed.start();
    killed.wait_ready();
    const auto stall = std::stoll(db_.scalar(
        "SELECT coalesce(max(gap), 0) FROM (SELECT (extract(epoch FROM committed_at - lag(committed_at) OVER "
        "(ORDER BY id)) * 1000)::bigint AS gap FROM batch_ledger WHERE run_id > " + last_run + ") pauses"));
    return std::chrono::milliseconds(stall);
  }

  std::unique_ptr<testing::NatsCluster> cluster_;
};

TEST_F(ClusteredNats, AKilledStreamLeaderAndAKilledMetaLeaderDuringTheLoadLoseNothing) {
  ASSERT_EQ(setup(config(", replicas: 3")).exit_code, 0);

  publish_random(2000, 300);
  const auto stream_leader = run_through_a_kill([&]() -> testing::NatsNode& {
    return cluster_->node(stream_info("ORDERS_0").leader);
  });
  publish_random(2000, 300);
  const auto meta_leader = run_through_a_kill([&]() -> testing::NatsNode& { return cluster_->meta_leader(); });
  // The figures of docs/scale-out.md: how long the loading paused while the cluster recovered.
  RecordProperty("stream_leader_stall_ms", std::to_string(stream_leader.count()));
  RecordProperty("meta_leader_stall_ms", std::to_string(meta_leader.count()));
  std::cout << "longest pause between commits: stream leader killed " << stream_leader.count()
            << " ms, meta leader killed " << meta_leader.count() << " ms" << std::endl;
}

}  // namespace
}  // namespace tidemark
