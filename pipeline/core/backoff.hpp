#pragma once
// Capped exponential backoff with full jitter (docs/rules.md rule 9), shared by database retries
// and the outbox relay; the views' inbox retention checks against the same ceilings.
#include <algorithm>
#include <chrono>
#include <random>

namespace tidemark::pipeline {

// The longest delay before retry number `attempt` (1 = the first retry):
// min(max_delay, base_delay * 2^(attempt-1)).
inline std::chrono::milliseconds backoff_ceiling(std::chrono::milliseconds base_delay,
                                                 std::chrono::milliseconds max_delay, int attempt) {
  const int doublings = std::clamp(attempt - 1, 0, 30);
  return std::min(max_delay, std::chrono::milliseconds(base_delay.count() << doublings));
}

// The delay before retry number `attempt`: uniform in [0, backoff_ceiling(...)].
template <class Rng>
std::chrono::milliseconds backoff_delay(std::chrono::milliseconds base_delay, std::chrono::milliseconds max_delay,
                                        int attempt, Rng& rng) {
  const auto ceiling = backoff_ceiling(base_delay, max_delay, attempt).count();
  std::uniform_int_distribution<long long> pick(0, std::max<long long>(ceiling, 0));
  return std::chrono::milliseconds(pick(rng));
}

}  // namespace tidemark::pipeline
