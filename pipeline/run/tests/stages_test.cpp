#include "pipeline/run/stages.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tidemark::pipeline {
namespace {

using ::testing::ElementsAre;

// A producer of the integers 0..count-1.
std::function<std::optional<int>()> count_to(int count) {
  return [next = 0, count]() mutable -> std::optional<int> {
    if (next == count) return std::nullopt;
    return next++;
  };
}

TEST(Stages, ConsumeEveryItemInTheOrderProduced) {
  std::vector<int> consumed;
  const StagesEnd end = run_two_stages<int>(count_to(100), [&](int& item) { consumed.push_back(item); }, nullptr);
  EXPECT_EQ(end, StagesEnd::kDrained);
  ASSERT_EQ(consumed.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(consumed[i], i) << "at " << i;
}

TEST(Stages, AnEmptyProducerDrainsAtOnce) {
  int consumed = 0;
  EXPECT_EQ(run_two_stages<int>(count_to(0), [&](int&) { ++consumed; }, [] { return false; }), StagesEnd::kDrained);
  EXPECT_EQ(consumed, 0);
}

TEST(Stages, MoveOnlyItemsPassThrough) {
  std::vector<std::string> consumed;
  int next = 0;
  const auto produce = [&]() -> std::optional<std::unique_ptr<std::string>> {
    if (next == 3) return std::nullopt;
    return std::make_unique<std::string>("item " + std::to_string(next++));
  };
  run_two_stages<std::unique_ptr<std::string>>(
      produce, [&](std::unique_ptr<std::string>& item) { consumed.push_back(*item); }, nullptr);
  EXPECT_THAT(consumed, ElementsAre("item 0", "item 1", "item 2"));
}

// Blocking work belongs on the pool, so that the io_context's thread only coordinates; each
// stage keeps one thread, so that its allocations stay in one malloc arena.
TEST(Stages, EachStageWorksOnAThreadOfItsOwnOffTheCallingThread) {
  std::mutex mutex;
  std::set<std::thread::id> producers;
  std::set<std::thread::id> consumers;
  auto produce = count_to(50);
  run_two_stages<int>(
      [&] {
        std::lock_guard lock(mutex);
        producers.insert(std::this_thread::get_id());
        return produce();
      },
      [&](int&) {
        std::lock_guard lock(mutex);
        consumers.insert(std::this_thread::get_id());
      },
      nullptr);
  ASSERT_EQ(producers.size(), 1u);
  ASSERT_EQ(consumers.size(), 1u);
  EXPECT_NE(*producers.begin(), *consumers.begin());
  EXPECT_EQ(producers.count(std::this_thread::get_id()), 0u);
  EXPECT_EQ(consumers.count(std::this_thread::get_id()), 0u);
}

// An item that notes the thread that frees it; a moved-from one frees nothing.
class Freed {
 public:
  Freed(int number, std::mutex& mutex, std::vector<std::pair<int, std::thread::id>>& freed)
      : number_(number), mutex_(&mutex), freed_(&freed) {}
  Freed(Freed&& other) noexcept
      : number_(other.number_), mutex_(other.mutex_), freed_(std::exchange(other.freed_, nullptr)) {}
  Freed& operator=(Freed&&) = delete;
  ~Freed() {
    if (freed_ == nullptr) return;
    std::lock_guard lock(*mutex_);
    freed_->emplace_back(number_, std::this_thread::get_id());
  }
  int number() const { return number_; }

 private:
  int number_;
  std::mutex* mutex_;
  std::vector<std::pair<int, std::thread::id>>* freed_;
};

// A consumed item is freed by the thread that made it (its malloc arena), while the next
// one is consumed; the last, after both stages have ended.
TEST(Stages, AConsumedItemIsFreedByTheProducersThread) {
  constexpr int kItems = 6;
  std::mutex mutex;
  std::vector<std::pair<int, std::thread::id>> freed;
  std::thread::id producer;
  int next = 0;
  const auto produce = [&]() -> std::optional<Freed> {
    producer = std::this_thread::get_id();
    if (next == kItems) return std::nullopt;
    return Freed(next++, mutex, freed);
  };
  std::vector<int> consumed;
  run_two_stages<Freed>(produce, [&](Freed& item) { consumed.push_back(item.number()); }, nullptr);
  ASSERT_EQ(consumed.size(), static_cast<std::size_t>(kItems));
  ASSERT_EQ(freed.size(), static_cast<std::size_t>(kItems)) << "an item outlived the stages";
  for (const auto& [number, thread] : freed) {
    if (number + 1 < kItems) {
      EXPECT_EQ(thread, producer) << "item " << number << " was not freed by the producer's thread";
    }
  }
}

// A rendezvous channel: while item N is consumed, N+1 is made and waits in the producer's
// hand-over, and N+2 is not begun. The producer then runs ahead of a consumer held on item 0
// as far as it may, and no further.
TEST(Stages, AtMostOneItemWaitsBetweenTheStages) {
  constexpr int kItems = 20;
  std::mutex mutex;
  std::condition_variable changed;
  int started = 0;   // produce calls that made an item
  int finished = 0;  // consume calls that have returned
  int most_ahead = 0;
  const auto produce = [&]() -> std::optional<int> {
    std::lock_guard lock(mutex);
    if (started == kItems) return std::nullopt;
    most_ahead = std::max(most_ahead, started - finished);
    changed.notify_all();
    return started++;
  };
  const auto consume = [&](int& item) {
    std::unique_lock lock(mutex);
    if (item == 0) {
      // Item 1 can be made while item 0 is in hand: wait for it (an event)...
      changed.wait(lock, [&] { return started >= 2; });
      // ...then give a producer that ignores the bound a moment to make item 2; a correct
      // one is blocked handing item 1 over, so this wait always runs out.
      changed.wait_for(lock, std::chrono::milliseconds(100), [&] { return started >= 3; });
      EXPECT_EQ(started, 2);
    }
    ++finished;
  };
  EXPECT_EQ(run_two_stages<int>(produce, consume, nullptr), StagesEnd::kDrained);
  EXPECT_EQ(finished, kItems);
  EXPECT_EQ(most_ahead, 1);  // item N+1 being made while N is consumed: the stages overlap
}

TEST(Stages, AProducerErrorIsRethrownAfterTheItemsBeforeItAreConsumed) {
  int next = 0;
  const auto produce = [&]() -> std::optional<int> {
    if (next == 5) throw std::runtime_error("read failed at item 5");
    return next++;
  };
  std::vector<int> consumed;
  try {
    run_two_stages<int>(produce, [&](int& item) { consumed.push_back(item); }, nullptr);
    ADD_FAILURE() << "the producer's error was not rethrown";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "read failed at item 5");
  }
  EXPECT_THAT(consumed, ElementsAre(0, 1, 2, 3, 4));
}

// The consumer fails while the producer is inside a produce call: the call is finished (it
// cannot be interrupted), its item is dropped, no further item is made, and only then is
// the consumer's error rethrown.
TEST(Stages, AConsumerErrorCancelsTheProducerAndWaitsForIt) {
  std::mutex mutex;
  std::condition_variable changed;
  int started = 0;
  bool consumer_failing = false;
  std::atomic<bool> producing{false};
  const auto produce = [&]() -> std::optional<int> {
    producing = true;
    std::unique_lock lock(mutex);
    const int item = started++;
    changed.notify_all();
    if (item == 2) changed.wait(lock, [&] { return consumer_failing; });
    producing = false;
    return item;
  };
  std::vector<int> consumed;
  const auto consume = [&](int& item) {
    if (item == 1) {
      std::unique_lock lock(mutex);
      changed.wait(lock, [&] { return started == 3; });  // the producer is inside item 2
      consumer_failing = true;
      changed.notify_all();
      throw std::runtime_error("commit failed");
    }
    consumed.push_back(item);
  };
  try {
    run_two_stages<int>(produce, consume, nullptr);
    ADD_FAILURE() << "the consumer's error was not rethrown";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "commit failed");
  }
  EXPECT_FALSE(producing) << "returned while a produce call was still running";
  EXPECT_EQ(started, 3) << "the producer went on after the consumer failed";
  EXPECT_THAT(consumed, ElementsAre(0));
}

TEST(Stages, AStopFinishesTheItemInHandAndTakesNoOther) {
  std::atomic<bool> stop{false};
  int made = 0;
  const auto produce = [&]() -> std::optional<int> { return made++; };  // never runs dry
  std::vector<int> consumed;
  const auto consume = [&](int& item) {
    consumed.push_back(item);
    if (item == 2) stop = true;  // asked during item 2: item 2 still finishes
  };
  EXPECT_EQ(run_two_stages<int>(produce, consume, [&] { return stop.load(); }), StagesEnd::kStopped);
  EXPECT_THAT(consumed, ElementsAre(0, 1, 2));
  EXPECT_LE(made, 4);  // item 3 (waiting in the producer's hand-over) is dropped
}

TEST(Stages, AStopBeforeTheFirstItemConsumesNothing) {
  int consumed = 0;
  EXPECT_EQ(run_two_stages<int>(count_to(10), [&](int&) { ++consumed; }, [] { return true; }),
            StagesEnd::kStopped);
  EXPECT_EQ(consumed, 0);
}

// A stop wins over a producer error that comes after the item in hand: the run is stopped,
// as with a graceful stop, and the batches before it are kept.
TEST(Stages, AStopDropsAProducerErrorNotYetReached) {
  std::atomic<bool> stop{false};
  int next = 0;
  const auto produce = [&]() -> std::optional<int> {
    if (next == 2) throw std::runtime_error("read failed");
    return next++;
  };
  std::vector<int> consumed;
  const auto consume = [&](int& item) {
    consumed.push_back(item);
    stop = true;
  };
  EXPECT_EQ(run_two_stages<int>(produce, consume, [&] { return stop.load(); }), StagesEnd::kStopped);
  EXPECT_THAT(consumed, ElementsAre(0));
}

}  // namespace
}  // namespace tidemark::pipeline
