#pragma once
// A warning that can recur many times (a transient database error while the database is
// away, a stalling client, an exhausted descriptor table) is logged once, then at most once
// an interval, each time with the count of those held back since: "… (41 more like this in
// the last 1m)". The first occurrence of a burst is always logged. The count rides on the
// next occurrence: no timer flushes it, so the ones held back at the end of a burst are not
// reported (the metrics count each). One per kind of warning, shared by the threads that log it.
#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>

namespace tidemark::pipeline {

class LogThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogThrottle(Clock::duration interval) : interval_(interval) {}

  // When this occurrence is to be logged, the suffix its line ends with: "" when none was
  // held back since the last line, else " (N more like this in the last 1m)"; nullopt when
  // it is held back (counted in the next line).
  std::optional<std::string> admit(Clock::time_point now = Clock::now());

 private:
  std::mutex mutex_;
  Clock::duration interval_;
  std::optional<Clock::time_point> last_;  // when a line was last logged
  std::size_t held_back_ = 0;
};

}  // namespace tidemark::pipeline
