#pragma once
// Capped exponential backoff, the one place its doubling is written: with full jitter
// (docs/rules.md rule 9) for database retries and the outbox relay's deliveries, whose
// retries many runs and relays make at once; without it (DoublingDelay) for reconnecting or
// restarting one thing of our own. The views' inbox retention checks against the same ceilings.
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

// The delay before trying one thing again after failures in a row: `first`, then doubling up
// to `max` (backoff_ceiling, without jitter: nothing else retries in step with it); a success
// starts again from `first`.
class DoublingDelay {
 public:
  DoublingDelay(std::chrono::milliseconds first, std::chrono::milliseconds max) : first_(first), max_(max) {}
  // One more failure in a row: the delay before the next try.
  std::chrono::milliseconds failed() {
    failures_ = std::min(failures_ + 1, 31);
    return backoff_ceiling(first_, max_, failures_);
  }
  void succeeded() { failures_ = 0; }

 private:
  std::chrono::milliseconds first_;
  std::chrono::milliseconds max_;
  int failures_ = 0;
};

}  // namespace tidemark::pipeline
