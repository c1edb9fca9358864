#include "pipeline/core/backoff.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

namespace tidemark::pipeline {
namespace {

using std::chrono::milliseconds;

TEST(Backoff, CeilingDoublesFromTheBaseUpToTheCap) {
  EXPECT_EQ(backoff_ceiling(milliseconds(100), milliseconds(1000), 1), milliseconds(100));
  EXPECT_EQ(backoff_ceiling(milliseconds(100), milliseconds(1000), 2), milliseconds(200));
  EXPECT_EQ(backoff_ceiling(milliseconds(100), milliseconds(1000), 4), milliseconds(800));
  EXPECT_EQ(backoff_ceiling(milliseconds(100), milliseconds(1000), 5), milliseconds(1000));
  // Attempts past 31 double no further (no overflow); attempt 0 counts as the first.
  EXPECT_EQ(backoff_ceiling(milliseconds(1), milliseconds(1LL << 40), 500), milliseconds(1LL << 30));
  EXPECT_EQ(backoff_ceiling(milliseconds(100), milliseconds(1000), 0), milliseconds(100));
}

TEST(Backoff, DelayIsDrawnWithinTheCeiling) {
  constexpr unsigned kSeed = 20261201;
  std::mt19937_64 rng(kSeed);
  for (int attempt = 1; attempt <= 12; ++attempt) {
    const auto ceiling = backoff_ceiling(milliseconds(50), milliseconds(3000), attempt);
    for (int draw = 0; draw < 200; ++draw) {
      const auto delay = backoff_delay(milliseconds(50), milliseconds(3000), attempt, rng);
      ASSERT_GE(delay.count(), 0) << "seed " << kSeed;
      ASSERT_LE(delay, ceiling) << "seed " << kSeed << " attempt " << attempt;
    }
  }
}

TEST(Backoff, DoublingDelayDoublesWithEachFailureInARowAndASuccessStartsAgain) {
  DoublingDelay delay(milliseconds(1000), milliseconds(5000));
  EXPECT_EQ(delay.failed(), milliseconds(1000));
  EXPECT_EQ(delay.failed(), milliseconds(2000));
  EXPECT_EQ(delay.failed(), milliseconds(4000));
  EXPECT_EQ(delay.failed(), milliseconds(5000));
  for (int failure = 0; failure < 100; ++failure) EXPECT_EQ(delay.failed(), milliseconds(5000));
  delay.succeeded();
  EXPECT_EQ(delay.failed(), milliseconds(1000));
}

}  // namespace
}  // namespace tidemark::pipeline
