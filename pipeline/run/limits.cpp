#include "pipeline/run/limits.hpp"

#include <algorithm>
#include <charconv>

namespace tidemark::pipeline {

bool RejectionLimit::exceeded_by(std::uint64_t rejected, std::uint64_t input) const {
  if (percent) return static_cast<double>(rejected) * 100.0 > *percent * static_cast<double>(input);
  return rejected > count;
}

std::string rejection_limit_message(const RejectionLimit& limit, const RejectionTally& tally) {
  const std::string batch = "batch " + std::to_string(tally.batch);
  const std::string checkpoint = tally.checkpoint.empty() ? "(start)" : tally.checkpoint;
  const std::string counts = "the run's rejected records (" + std::to_string(tally.invalid) + " invalid + " +
                             std::to_string(tally.conflict) + " conflict = " +
                             std::to_string(tally.invalid + tally.conflict) + " of " + std::to_string(tally.input) +
                             " input) exceed max_rejected " + limit.text;
  if (tally.dry_run) {
    return "pipeline " + tally.pipeline + ": dry run stopped at " + batch + ": " + counts + "; a run would roll " +
           batch + " back and fail there, its checkpoint staying at " + checkpoint + "; nothing was written";
  }
  return "pipeline " + tally.pipeline + ": " + batch + " rolled back: " + counts + "; the checkpoint stays at " +
         checkpoint + ", after the last committed batch";
}

std::optional<RejectionLimit> parse_rejection_limit(std::string_view text) {
  RejectionLimit limit;
  limit.text = std::string(text);
  if (!text.ends_with('%')) {
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), limit.count);
    if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return limit;
  }
  const std::string_view number = text.substr(0, text.size() - 1);
  // Digits with at most one '.', between digits: no sign, exponent, or spaces.
  const auto dot = number.find('.');
  const auto digits = [](std::string_view part) {
    return !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(number.substr(0, dot)) || (dot != std::string_view::npos && !digits(number.substr(dot + 1)))) {
    return std::nullopt;
  }
  double value = 0;
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (error != std::errc{} || end != number.data() + number.size() || value > 100.0) return std::nullopt;
  limit.percent = value;
  return limit;
}

}  // namespace tidemark::pipeline
