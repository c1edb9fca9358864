#include "pipeline/relay/lane_scheduler.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace tidemark::pipeline::relay {
namespace {

using std::chrono::milliseconds;
using TimePoint = LaneScheduler::TimePoint;

constexpr Duration kLease = std::chrono::seconds(40);  // a quarter of it is 40 rate periods
const TimePoint kStart = TimePoint() + std::chrono::hours(1);

OutboxEvent event(std::int64_t id, const std::string& destination) {
  OutboxEvent event;
  event.id = id;
  event.destination = destination;
  event.attempt = 1;
  return event;
}

std::vector<OutboxEvent> events(std::int64_t first, int count, const std::string& destination) {
  std::vector<OutboxEvent> claimed;
  for (int i = 0; i < count; ++i) claimed.push_back(event(first + i, destination));
  return claimed;
}

std::size_t nothing_requested(const std::string&) { return 0; }

// What send_queued sends, by destination, in order.
std::vector<std::string> send_all(LaneScheduler& lanes, TimePoint now) {
  std::vector<std::string> sent;
  lanes.send_queued(now, [&sent](OutboxEvent event) { sent.push_back(event.destination); });
  return sent;
}

TEST(LaneScheduler, ALaneWithAWindowOfItsOwnAsksAndSendsNoMoreThanItAllows) {
  LaneScheduler lanes(10, {"fast", "slow"}, {{"slow", 2}, {"fast", 50}}, kLease);
  lanes.begin(kStart);
  // Before any answer each queue is one window: slow may have 2 + 2 claimed, fast 10 + 10
  // (its own 50 is clamped to the relay's 10), and the relay 10 + 10 in all.
  const auto capacities = lanes.capacities(1, 0, nothing_requested);
  EXPECT_EQ(capacities.at("slow"), 4u);
  EXPECT_EQ(capacities.at("fast"), 20u);
  EXPECT_EQ(lanes.limit(), 20u);

  auto claimed = events(1, 4, "slow");
  lanes.claimed({{"slow", 4}}, 4, claimed, kStart, 1);
  EXPECT_EQ(send_all(lanes, kStart), (std::vector<std::string>{"slow", "slow"}));
  EXPECT_EQ(lanes.sending(), 2u);
  EXPECT_TRUE(lanes.has_queued());
  EXPECT_EQ(lanes.outstanding(), 4u);
  // Its window and queue are full: the next claim asks only of the other destination.
  const auto next = lanes.capacities(2, lanes.outstanding(), nothing_requested);
  EXPECT_FALSE(next.contains("slow"));
  EXPECT_EQ(next.at("fast"), 16u);  // the relay's limit less what is outstanding

  lanes.answered("slow", 1);
  EXPECT_EQ(send_all(lanes, kStart), (std::vector<std::string>{"slow"}));
}

TEST(LaneScheduler, WhenTheRelaysWindowIsFullEachFreedPlaceGoesToTheNextDestination) {
  LaneScheduler lanes(2, {"a", "b", "c"}, {}, kLease);
  lanes.begin(kStart);
  for (const char* name : {"a", "b", "c"}) {
    auto claimed = events(name[0] * 100, 3, name);
    lanes.claimed({{name, 4}}, 4, claimed, kStart, 1);
  }
  EXPECT_EQ(send_all(lanes, kStart), (std::vector<std::string>{"a", "b"}));
  lanes.answered("a", 'a' * 100);
  EXPECT_EQ(send_all(lanes, kStart), (std::vector<std::string>{"c"}));
  lanes.answered("b", 'b' * 100);
  EXPECT_EQ(send_all(lanes, kStart), (std::vector<std::string>{"a"}));
}

TEST(LaneScheduler, AnEventClaimedMoreThanHalfALeaseAgoIsNotSent) {
  LaneScheduler lanes(4, {"a"}, {}, kLease);
  lanes.begin(kStart);
  auto old = events(1, 1, "a");
  lanes.claimed({{"a", 4}}, 4, old, kStart, 1);
  auto fresh = events(2, 1, "a");
  lanes.claimed({{"a", 4}}, 4, fresh, kStart + kLease / 2, 2);
  std::vector<std::int64_t> sent;
  lanes.send_queued(kStart + kLease / 2 + milliseconds(1), [&sent](OutboxEvent event) { sent.push_back(event.id); });
  EXPECT_EQ(sent, (std::vector<std::int64_t>{2}));
  EXPECT_FALSE(lanes.has_queued());
}

TEST(LaneScheduler, AClaimThatGotLessThanItAskedCoversItsLaneAndOneThatGotAllDoesNot) {
  LaneScheduler lanes(10, {"a", "b"}, {}, kLease);
  lanes.begin(kStart);
  EXPECT_FALSE(lanes.all_covered(1));
  auto claimed = events(1, 3, "a");
  claimed.push_back(event(9, "b"));
  // a: asked 5, got 3 (no more due); b: asked 1, got 1 (more may be due).
  EXPECT_TRUE(lanes.claimed({{"a", 5}, {"b", 1}}, 6, claimed, kStart, 1));
  EXPECT_TRUE(claimed.empty());
  const auto next = lanes.capacities(1, lanes.outstanding(), nothing_requested);
  EXPECT_FALSE(next.contains("a"));
  EXPECT_TRUE(next.contains("b"));
  EXPECT_FALSE(lanes.all_covered(1));
  auto none = events(0, 0, "b");
  EXPECT_FALSE(lanes.claimed({{"b", 5}}, 5, none, kStart, 1));
  EXPECT_TRUE(lanes.all_covered(1));
  EXPECT_FALSE(lanes.all_covered(2));  // a later reason to look is not covered yet

  // Where the limit across destinations bound, none is known to have no more.
  auto bound = events(20, 2, "a");
  EXPECT_TRUE(lanes.claimed({{"a", 5}, {"b", 5}}, 2, bound, kStart, 2));
  EXPECT_FALSE(lanes.all_covered(2));
}

TEST(LaneScheduler, WhatRunningStatementsMayClaimCountsAgainstALane) {
  LaneScheduler lanes(4, {"a"}, {}, kLease);
  lanes.begin(kStart);
  EXPECT_EQ(lanes.capacities(1, 3, [](const std::string&) { return std::size_t{3}; }).at("a"), 5u);
  EXPECT_TRUE(lanes.capacities(1, 8, nothing_requested).empty());  // the relay's limit is reached
}

TEST(LaneScheduler, QueuesFollowTheAnswerRateBetweenOneWindowAndClaimAheadLessOne) {
  LaneScheduler lanes(4, {"a", "b"}, {{"b", 2}}, kLease);
  lanes.begin(kStart);
  auto claimed = events(1, 4, "a");
  lanes.claimed({{"a", 8}}, 8, claimed, kStart, 1);
  send_all(lanes, kStart);
  for (std::int64_t id = 1; id <= 4; ++id) lanes.answered("a", id);
  lanes.end_period(kStart + kRatePeriod - milliseconds(1));  // the period has not ended
  EXPECT_EQ(lanes.limit(), 8u);
  // 4 answers a period, 40 periods in a quarter of a lease: 160, capped at 7 windows.
  lanes.end_period(kStart + kRatePeriod);
  EXPECT_EQ(lanes.limit(), 4u + 7u * 4u);
  const auto capacities = lanes.capacities(2, 0, nothing_requested);  // past the claim's coverage of a
  EXPECT_EQ(capacities.at("a"), 32u);
  EXPECT_EQ(capacities.at("b"), 4u);  // no answers of its own: one window of queue
  // A period without answers brings the queues back to one window.
  lanes.end_period(kStart + 2 * kRatePeriod);
  EXPECT_EQ(lanes.limit(), 8u);
}

TEST(LaneScheduler, LeasesInFlightAreRenewedEveryThirdOfALease) {
  LaneScheduler lanes(4, {"a"}, {}, kLease);
  lanes.begin(kStart);
  auto claimed = events(1, 2, "a");
  lanes.claimed({{"a", 4}}, 4, claimed, kStart, 1);
  send_all(lanes, kStart);
  EXPECT_EQ(lanes.next_renewal(), kStart + kLease / 3);
  std::vector<std::int64_t> ids;
  std::vector<std::int64_t> attempts;
  lanes.take_renewals(kStart + kLease / 3 - milliseconds(1), ids, attempts);
  EXPECT_TRUE(ids.empty());
  lanes.take_renewals(kStart + kLease / 3, ids, attempts);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(attempts, (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(lanes.next_renewal(), TimePoint::max());  // both are being renewed
  // 1 was renewed; 2 was fenced out (another claim took it) and is given back.
  const TimePoint renewed_at = kStart + kLease / 3;
  const auto lost = lanes.renewal_ended(ids, {1}, false, renewed_at);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].first, 2);
  EXPECT_EQ(lanes.next_renewal(), renewed_at + kLease / 3);
  // A renewal that failed is asked again.
  lanes.take_renewals(renewed_at + kLease / 3, ids, attempts);
  EXPECT_TRUE(lanes.renewal_ended(ids, {}, true, renewed_at).empty());
  EXPECT_EQ(lanes.next_renewal(), renewed_at + kLease / 3);
  // An answer ends the attempt: nothing is left to renew.
  lanes.answered("a", 1);
  EXPECT_EQ(lanes.next_renewal(), TimePoint::max());
}

TEST(LaneScheduler, ANewLoopForgetsWhatWasQueuedButKeepsCountingRequestsSent) {
  LaneScheduler lanes(2, {"a"}, {}, kLease);
  lanes.begin(kStart);
  auto claimed = events(1, 4, "a");
  lanes.claimed({{"a", 4}}, 4, claimed, kStart, 1);
  send_all(lanes, kStart);
  lanes.begin(kStart + milliseconds(5));
  EXPECT_FALSE(lanes.has_queued());
  EXPECT_EQ(lanes.sending(), 2u);  // their answers come to the new loop
  EXPECT_EQ(lanes.next_renewal(), TimePoint::max());
  lanes.answered("a", 1);
  EXPECT_EQ(lanes.sending(), 1u);
}

}  // namespace
}  // namespace tidemark::pipeline::relay
