#pragma once
// The unit of every time option, and how one is written for people: the config's
// durations are milliseconds, and a message names one as the config would write it.
#include <chrono>
#include <string>
#include <string_view>
#include <utility>

namespace tidemark::pipeline {

using Duration = std::chrono::milliseconds;

// In the largest unit that divides it ("168h", "90s", "250ms"), as the config writes one.
inline std::string format_duration(Duration duration) {
  static constexpr std::pair<std::string_view, Duration::rep> kUnits[] = {
      {"h", 3'600'000}, {"m", 60'000}, {"s", 1'000}, {"ms", 1}};
  for (const auto& [suffix, milliseconds] : kUnits) {
    if (duration.count() != 0 && duration.count() % milliseconds == 0) {
      return std::to_string(duration.count() / milliseconds) + std::string(suffix);
    }
  }
  return std::to_string(duration.count()) + "ms";
}

}  // namespace tidemark::pipeline
