// The summary of a repeated warning (docs/operations.md "Logs"): the first of a burst is
// logged, then at most one an interval, carrying the count held back since the last line.
// The clock is the test's.
#include "pipeline/core/log_throttle.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace tidemark::pipeline {
namespace {

using namespace std::chrono_literals;

TEST(LogThrottle, TheFirstIsLoggedThenOneAnIntervalWithTheCountHeldBack) {
  LogThrottle throttle(60s);
  const LogThrottle::Clock::time_point start{};
  EXPECT_EQ(throttle.admit(start), "");
  EXPECT_EQ(throttle.admit(start + 1s), std::nullopt);
  EXPECT_EQ(throttle.admit(start + 30s), std::nullopt);
  EXPECT_EQ(throttle.admit(start + 59s), std::nullopt);
  EXPECT_EQ(throttle.admit(start + 60s), " (3 more like this in the last 1m)");
  EXPECT_EQ(throttle.admit(start + 61s), std::nullopt);
  // The count covers the time since the last line, however long the quiet was.
  EXPECT_EQ(throttle.admit(start + 300s), " (1 more like this in the last 4m)");
  // Nothing held back: the line is the warning alone.
  EXPECT_EQ(throttle.admit(start + 400s), "");
}

TEST(LogThrottle, ThePartSecondIsRoundedUpSoTheTimeCoversEveryOneCounted) {
  LogThrottle throttle(10s);
  const LogThrottle::Clock::time_point start{};
  EXPECT_EQ(throttle.admit(start), "");
  EXPECT_EQ(throttle.admit(start + 2s), std::nullopt);
  EXPECT_EQ(throttle.admit(start + 10s + 300ms), " (1 more like this in the last 11s)");
}

// Threads share one (the database retries of every run and the relay): each occurrence is
// either logged or counted, exactly once.
TEST(LogThrottle, ThreadsSharingOneCountEachOccurrenceOnce) {
  LogThrottle throttle(1h);
  std::atomic<int> logged = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if (throttle.admit()) ++logged;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(logged, 1);
  const auto summary = throttle.admit(LogThrottle::Clock::now() + 2h);
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->rfind(" (3999 more like this in the last ", 0), 0u) << *summary;
}

}  // namespace
}  // namespace tidemark::pipeline
