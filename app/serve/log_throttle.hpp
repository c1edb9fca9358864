#pragma once
// At most one log line per interval for a condition that can recur thousands of times a
// second (an exhausted descriptor table, a flood of stalling clients); the lines held back
// are counted in the next one. Not thread-safe: each is used on the io_context's thread.
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>

namespace tidemark::app::serve {

class LogThrottle {
 public:
  explicit LogThrottle(std::chrono::steady_clock::duration interval) : interval_(interval) {}

  // The number of lines held back since the last one when this one may be logged, else nullopt.
  std::optional<std::size_t> admit() {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_) {
      ++held_back_;
      return std::nullopt;
    }
    next_ = now + interval_;
    return std::exchange(held_back_, 0);
  }

 private:
  std::chrono::steady_clock::duration interval_;
  std::chrono::steady_clock::time_point next_{};
  std::size_t held_back_ = 0;
};

// The suffix a throttled line ends with: "" or " (N more since the last report)".
inline std::string held_back(std::size_t count) {
  return count == 0 ? "" : " (" + std::to_string(count) + " more since the last report)";
}

}  // namespace tidemark::app::serve
