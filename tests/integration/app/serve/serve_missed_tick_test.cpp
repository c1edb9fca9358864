// A scheduled tick that falls in a database outage (docs/operations.md "The schedule in a
// database outage"): serve keeps it and, once the database answers, records and runs it once,
// however many ticks fell in the outage; the run's reason says which tick it was. Serve runs
// in this process so that the test waits on its log lines and on rows, never on a sleep.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "app/serve/service.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::app::serve {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;
using testing::TestDatabase;

// Every message logged while it is installed, to be waited on.
class CapturedLog final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  bool contains(const std::string& text) {
    std::lock_guard lock(mutex_);
    return std::any_of(messages_.begin(), messages_.end(),
                       [&](const std::string& message) { return message.find(text) != std::string::npos; });
  }
  std::string all() {
    std::lock_guard lock(mutex_);
    std::string text;
    for (const auto& message : messages_) text += message + "\n";
    return text;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    messages_.emplace_back(message.payload.data(), message.payload.size());
  }
  void flush_() override {}

 private:
  std::vector<std::string> messages_;
};

// Waits until `condition` holds; false at the deadline.
template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout = 60s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

constexpr char kMissedRuns[] = "SELECT count(*) FROM runs WHERE reason LIKE 'scheduled tick at % missed%'";

TEST(ServeMissedTickTest, TicksInADatabaseOutageRunOnceWhenTheDatabaseIsBack) {
  TestDatabase db;
  TempDir dir;
  const auto input = dir.write("in.csv", "transaction_id,source_revision,amount,account_id\ntx-1,1,1.00,acct-1\n");
  ServeOptions options;
  options.config = app::config::parse_config("pipelines:\n  transactions:\n    source: {path: " + input.string() +
                                                 "}\n    schedule: {every: 1s}\n",
                                             "missed-tick-test.yaml");
  options.database_url = db.url();
  options.listen = "127.0.0.1:0";
  auto log = std::make_shared<CapturedLog>();
  const auto level = spdlog::get_level();
  spdlog::default_logger()->sinks().push_back(log);
  spdlog::set_level(spdlog::level::debug);
  auto service = std::make_unique<Service>(std::move(options));
  std::thread serving([&] { service->run(); });

  ASSERT_TRUE(eventually([&] { return db.scalar("SELECT count(*) FROM runs WHERE status = 'succeeded'") != "0"; }));
  TestDatabase::crash_cluster();
  // A tick could not be recorded and is kept, and a later tick joined it.
  const bool kept = eventually([&] { return log->contains("is not recorded yet"); });
  const bool joined = kept && eventually([&] { return log->contains("joins the one missed at"); });
  TestDatabase::restart_cluster();
  EXPECT_TRUE(kept && joined) << log->all();

  // Recorded once the database answers; a tick on time after it proves the retries are over.
  EXPECT_TRUE(eventually([&] { return db.scalar(kMissedRuns) != "0"; })) << log->all();
  const std::string missed_run =
      db.scalar("SELECT coalesce(max(id), 0) FROM runs WHERE reason LIKE 'scheduled tick at % missed%'");
  EXPECT_TRUE(eventually([&] {
    return db.scalar("SELECT count(*) FROM runs WHERE reason IS NULL AND id > " + missed_run) != "0";
  })) << log->all();
  EXPECT_TRUE(eventually([&] { return db.scalar("SELECT status FROM runs WHERE id = " + missed_run) == "succeeded"; }))
      << db.scalar("SELECT status || ' ' || coalesce(error, '') FROM runs WHERE id = " + missed_run);
  service->request_stop();
  serving.join();
  spdlog::set_level(level);
  auto& sinks = spdlog::default_logger()->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), log), sinks.end());

  EXPECT_EQ(db.scalar(kMissedRuns), "1") << log->all();
  EXPECT_EQ(db.scalar("SELECT trigger FROM runs WHERE id = " + missed_run), "schedule");
  EXPECT_TRUE(log->contains("is recorded as run " + missed_run)) << log->all();
}

}  // namespace
}  // namespace tidemark::app::serve
