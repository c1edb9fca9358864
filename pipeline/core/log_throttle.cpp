#include "pipeline/core/log_throttle.hpp"

#include <utility>

#include "pipeline/core/duration.hpp"

namespace tidemark::pipeline {

std::optional<std::string> LogThrottle::admit(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (last_ && now < *last_ + interval_) {
    ++held_back_;
    return std::nullopt;
  }
  const std::size_t held = std::exchange(held_back_, 0);
  std::string suffix;
  if (held > 0) {
    // Whole seconds, rounded up: "in the last 60s" covers every one of them.
    const auto seconds = std::chrono::ceil<std::chrono::seconds>(now - *last_);
    suffix = " (" + std::to_string(held) + " more like this in the last " + format_duration(seconds) + ")";
  }
  last_ = now;
  return suffix;
}

}  // namespace tidemark::pipeline
