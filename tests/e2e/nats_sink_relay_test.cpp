// `tidemark relay --once` delivering to a NATS JetStream destination, as real processes
// against a real PostgreSQL and a real nats-server: every pending event is stored in the
// stream exactly once (counted by Nats-Msg-Id), a relay killed between the PubAck and
// recording it included; and the relay refuses to start (exit 2) on a stream whose duplicate
// window does not exceed the redelivery horizon.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "app/config/config.hpp"
#include "app/wiring/sinks.hpp"
#include "pipeline/core/duration.hpp"
#include "tests/support/nats_server.hpp"
#include "tests/support/nats_sink_stream.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing::NatsServer;
using testing::ProcessOptions;
using testing::ProcessResult;
using testing::run_tidemark;
using testing::TestDatabase;

constexpr int kEvents = 40;
constexpr int kAccounts = 4;

class NatsSinkRelay : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() /
              ("tidemark-nats-sink-e2e-" + std::to_string(getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(folder_ / "in");
    config_ = (folder_ / "config.yaml").string();
    std::ofstream(config_) << "pipelines:\n"
                           << "  transactions:\n"
                           << "    source: {kind: file, path: " << (folder_ / "in").string() << ", format: csv}\n"
                           << "    destinations:\n"
                           << "      - {name: bus, kind: nats, servers: [" << server_.url()
                           << "], subject: ledger.events, stream: LEDGER}\n"
                           << "relay: {max_attempts: 5, base_delay: 10ms, max_delay: 50ms, connect_timeout: 1s, "
                              "request_timeout: 2s}\n";
    std::ofstream csv(folder_ / "in" / "batch.csv");
    csv << "transaction_id,source_revision,amount,account_id\n";
    for (int i = 0; i < kEvents; ++i) csv << "t" << i << ",1," << i << ".50,acc-" << i % kAccounts << "\n";
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  // The horizon the relay computes from this config (app/wiring), which the stream must exceed.
  pipeline::Duration horizon() const {
    const auto config = app::config::load_config(config_);
    return app::nats_options(config.destinations().at("bus"), config.relay).redelivery_horizon;
  }

  ProcessResult tidemark(std::vector<std::string> args, const std::string& failpoints = "") const {
    args.insert(args.end(), {"--config", config_, "--database", db_.url()});
    ProcessOptions options;
    if (!failpoints.empty()) options.env["TIDEMARK_FAILPOINTS"] = failpoints;
    return run_tidemark(args, options);
  }

  TestDatabase db_;
  NatsServer server_;
  std::filesystem::path folder_;
  std::string config_;
};

TEST_F(NatsSinkRelay, EveryPendingEventIsStoredOnceEvenAfterAKillBetweenThePubAckAndRecordingIt) {
  connectors::nats_sink::setup_stream({.servers = {server_.url()}}, "LEDGER", "ledger.events", horizon());
  const auto run = tidemark({"run", "--pipeline", "transactions"});
  ASSERT_EQ(run.exit_code, 0) << run.both();
  ASSERT_EQ(db_.scalar("SELECT count(*) FROM outbox WHERE destination = 'bus'"), std::to_string(kEvents));

  const auto killed = tidemark({"relay", "--once"}, "relay_after_send");
  ASSERT_EQ(killed.exit_code, 137) << killed.both();
  const auto stored_before_rerun = testing::read_stream(server_.url(), "LEDGER").size();
  EXPECT_GE(stored_before_rerun, 1u) << "the kill came after a PubAck";
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM outbox WHERE status = 'delivered'"), "0");

  // The killed relay's claims are leased (6 s here); a rerun sends them once the lease ends.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (db_.scalar("SELECT count(*) FROM outbox WHERE status <> 'delivered'") != "0" &&
         std::chrono::steady_clock::now() < deadline) {
    const auto rerun = tidemark({"relay", "--once"});
    ASSERT_EQ(rerun.exit_code, 0) << rerun.both();
    // Until the next lease or retry delay ends, nothing is due: wait for that moment.
    const double due_in = std::stod(db_.scalar(
        "SELECT COALESCE(GREATEST(0, EXTRACT(EPOCH FROM min(next_attempt_at) - now())), 0) FROM outbox "
        "WHERE status = 'pending'"));
    std::this_thread::sleep_for(std::chrono::duration<double>(due_in));
  }
  ASSERT_EQ(db_.scalar("SELECT count(*) FROM outbox WHERE status <> 'delivered'"), "0");
  EXPECT_GE(std::stoi(db_.scalar("SELECT max(attempts) FROM outbox")), 2) << "the events sent before the kill went again";

  const auto messages = testing::read_stream(server_.url(), "LEDGER");
  const auto counts = testing::count_by_msg_id(messages);
  EXPECT_EQ(messages.size(), static_cast<std::size_t>(kEvents));
  ASSERT_EQ(counts.size(), static_cast<std::size_t>(kEvents));
  auto connection = db_.connect();
  pqxx::work txn(*connection);
  for (const auto& row : txn.exec("SELECT idempotency_key, partition_key FROM outbox")) {
    const auto key = row[0].as<std::string>();
    ASSERT_EQ(counts.count(key), 1u) << key << " is not in the stream";
    EXPECT_EQ(counts.at(key), 1) << key;
  }
  for (const auto& message : messages) {
    EXPECT_THAT(message.data, HasSubstr("\"event_id\": \"" + message.msg_id + "\""));
    EXPECT_THAT(message.subject, ::testing::StartsWith("ledger.events.acc-"));
  }
}

TEST_F(NatsSinkRelay, StartUpRefusesAStreamWhoseDuplicateWindowIsNotLongerThanTheHorizon) {
  testing::create_stream(server_.url(), "LEDGER", {"ledger.events.>"}, 2s);
  ASSERT_EQ(tidemark({"run", "--pipeline", "transactions"}).exit_code, 0);

  const auto refused = tidemark({"relay", "--once"});
  EXPECT_EQ(refused.exit_code, 2) << refused.both();
  EXPECT_THAT(refused.err, HasSubstr("destination 'bus': JetStream stream LEDGER has a duplicate window of 2s"));
  EXPECT_THAT(refused.err, HasSubstr("redelivery horizon of " + pipeline::format_duration(horizon())));
  EXPECT_TRUE(testing::read_stream(server_.url(), "LEDGER").empty());
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM outbox WHERE status = 'pending' AND attempts = 0"),
            std::to_string(kEvents));
}

// `tidemark nats setup` makes a nats destination's stream too (a pipeline whose source is a
// file): a duplicate window of twice the relay's horizon; an existing stream is left as it is.
TEST_F(NatsSinkRelay, NatsSetupCreatesTheDestinationsStreamWithTwiceTheHorizonAndLeavesAnExistingOne) {
  const std::vector<std::string> setup{"nats", "setup", "--pipeline", "transactions", "--config", config_};
  const auto created = run_tidemark(setup);
  ASSERT_EQ(created.exit_code, 0) << created.both();
  EXPECT_THAT(created.out, HasSubstr("stream LEDGER: created for destination bus (subjects ledger.events.>, "
                                     "duplicate window " + pipeline::format_duration(2 * horizon()) + ")"));
  const auto again = run_tidemark(setup);
  EXPECT_EQ(again.exit_code, 0) << again.both();
  EXPECT_THAT(again.out, HasSubstr("stream LEDGER: exists as configured"));
  ASSERT_EQ(tidemark({"run", "--pipeline", "transactions"}).exit_code, 0);
  const auto relay = tidemark({"relay", "--once"});
  ASSERT_EQ(relay.exit_code, 0) << relay.both();
  EXPECT_EQ(testing::read_stream(server_.url(), "LEDGER").size(), static_cast<std::size_t>(kEvents));
}

TEST_F(NatsSinkRelay, NatsSetupReportsADestinationsStreamWhoseWindowIsTooShort) {
  testing::create_stream(server_.url(), "LEDGER", {"ledger.events.>"}, 2s);
  const auto differs = run_tidemark({"nats", "setup", "--pipeline", "transactions", "--config", config_});
  EXPECT_EQ(differs.exit_code, 2) << differs.both();
  EXPECT_THAT(differs.out, HasSubstr("stream LEDGER: exists and differs from the configuration (left as it is)"));
  EXPECT_THAT(differs.out, HasSubstr("duplicate window 2s"));
}

TEST_F(NatsSinkRelay, StartUpRefusesAMissingStream) {
  const auto refused = tidemark({"relay", "--once"});
  EXPECT_EQ(refused.exit_code, 2) << refused.both();
  EXPECT_THAT(refused.err, HasSubstr("JetStream stream LEDGER does not exist"));
}

}  // namespace
}  // namespace tidemark
