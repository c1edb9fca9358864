#pragma once
// Capped exponential backoff with full jitter (DESIGN rule 9), shared by database retries
// and the outbox relay.
#include <algorithm>
#include <chrono>
#include <random>

namespace tidemark::pipeline {

// The delay before retry number `attempt` (1 = the first retry): uniform in
// [0, min(max_delay, base_delay * 2^(attempt-1))].
template <class Rng>
std::chrono::milliseconds backoff_delay(std::chrono::milliseconds base_delay, std::chrono::milliseconds max_delay,
                                        int attempt, Rng& rng) {
  const int doublings = std::clamp(attempt - 1, 0, 30);
  const auto ceiling = std::min<long long>(max_delay.count(), base_delay.count() << doublings);
  std::uniform_int_distribution<long long> pick(0, std::max<long long>(ceiling, 0));
  return std::chrono::milliseconds(pick(rng));
}

}  // namespace tidemark::pipeline
