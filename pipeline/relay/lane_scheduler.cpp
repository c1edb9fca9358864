#include "pipeline/relay/lane_scheduler.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace tidemark::pipeline::relay {

LaneScheduler::LaneScheduler(std::size_t window, const std::vector<std::string>& destinations,
                             const std::map<std::string, std::size_t>& windows, Duration lease)
    : window_(window), lease_(lease), queue_limit_(window) {
  for (const std::string& name : destinations) {
    const auto own = windows.find(name);
    lanes_[name].window = own == windows.end() ? window : std::clamp<std::size_t>(own->second, 1, window);
  }
}

void LaneScheduler::begin(TimePoint now) {
  for (auto& [name, lane] : lanes_) {
    lane.queued.clear();
    lane.queue_limit = lane.window;
    lane.answers_in_period = 0;
    lane.covered = 0;
  }
  in_flight_.clear();
  queue_limit_ = window_;
  period_end_ = now + kRatePeriod;
}

void LaneScheduler::answered(const std::string& destination, std::int64_t id) {
  Lane& lane = lanes_.at(destination);
  --lane.sending;
  ++lane.answers_in_period;
  in_flight_.erase(id);
}

void LaneScheduler::send_queued(TimePoint now, const std::function<void(OutboxEvent)>& send) {
  const auto stale = now - lease_ / 2;
  std::size_t sending = this->sending();
  // While the relay's window is full, places free one at a time, and each goes to the next
  // destination that has an event queued, not always to the first.
  for (bool sent = true; sent && sending < window_;) {
    sent = false;
    auto it = lanes_.upper_bound(last_served_);
    for (std::size_t looked = 0; looked < lanes_.size() && sending < window_; ++looked, ++it) {
      if (it == lanes_.end()) it = lanes_.begin();
      auto& [name, lane] = *it;
      while (!lane.queued.empty() && lane.queued.front().claimed < stale) {
        spdlog::debug("not sending outbox event {} ({}): claimed too long ago, it goes again when its lease runs out",
                      lane.queued.front().event.id, lane.queued.front().event.idempotency_key);
        lane.queued.pop_front();
      }
      if (lane.queued.empty() || lane.sending >= lane.window) continue;
      in_flight_[lane.queued.front().event.id] = {lane.queued.front().event.attempt, lane.queued.front().claimed};
      send(std::move(lane.queued.front().event));
      lane.queued.pop_front();
      ++lane.sending;
      ++sending;
      last_served_ = name;
      sent = true;
    }
  }
}

std::size_t LaneScheduler::sending() const {
  std::size_t sending = 0;
  for (const auto& [name, lane] : lanes_) sending += lane.sending;
  return sending;
}

bool LaneScheduler::has_queued() const {
  return std::any_of(lanes_.begin(), lanes_.end(), [](const auto& lane) { return !lane.second.queued.empty(); });
}

std::size_t LaneScheduler::outstanding() const {
  std::size_t outstanding = 0;
  for (const auto& [name, lane] : lanes_) outstanding += lane.queued.size() + lane.sending;
  return outstanding;
}

std::size_t LaneScheduler::queue_for(std::size_t answers, std::size_t window) const {
  // A queue holds what its window sends in a quarter of a lease, so an event's lease outlasts
  // its wait here and its attempt.
  const double periods_per_quarter_lease = std::chrono::duration<double>(lease_ / 4) / kRatePeriod;
  const auto rate_limit = static_cast<std::size_t>(static_cast<double>(answers) * periods_per_quarter_lease);
  return std::clamp(rate_limit, window, (kClaimAhead - 1) * window);
}

void LaneScheduler::end_period(TimePoint now) {
  if (now < period_end_) return;
  std::size_t answers_in_period = 0;
  for (const auto& [name, lane] : lanes_) answers_in_period += lane.answers_in_period;
  queue_limit_ = queue_for(answers_in_period, window_);
  for (auto& [name, lane] : lanes_) {
    lane.queue_limit = queue_for(lane.answers_in_period, lane.window);
    lane.answers_in_period = 0;
  }
  period_end_ = now + kRatePeriod;
}

std::map<std::string, std::size_t> LaneScheduler::capacities(
    std::uint64_t wanted, std::size_t outstanding, const std::function<std::size_t(const std::string&)>& requested) const {
  std::map<std::string, std::size_t> capacities;
  const std::size_t limit = this->limit();
  if (outstanding >= limit) return capacities;
  for (const auto& [name, lane] : lanes_) {
    const std::size_t lane_outstanding = lane.queued.size() + lane.sending + requested(name);
    const std::size_t lane_limit = lane.window + lane.queue_limit;
    if (wanted > lane.covered && lane_outstanding < lane_limit) {
      capacities[name] = std::min(lane_limit - lane_outstanding, limit - outstanding);
    }
  }
  return capacities;
}

bool LaneScheduler::claimed(const std::map<std::string, std::size_t>& capacities, std::size_t capacity,
                            std::vector<OutboxEvent>& claimed, TimePoint claimed_at, std::uint64_t view) {
  // Where the limit across them bound, no destination is known to have no more.
  const bool bound = capacity > 0 && claimed.size() >= capacity;
  bool more = bound;
  for (const auto& [name, asked] : capacities) {
    const auto got = std::count_if(claimed.begin(), claimed.end(),
                                   [&name](const OutboxEvent& event) { return event.destination == name; });
    if (!bound && static_cast<std::size_t>(got) < asked) {
      Lane& lane = lanes_.at(name);
      lane.covered = std::max(lane.covered, view);
    } else {
      more = true;
    }
  }
  for (auto& event : claimed) {
    const std::string destination = event.destination;
    lanes_.at(destination).queued.push_back({std::move(event), claimed_at});
  }
  claimed.clear();
  return more;
}

bool LaneScheduler::all_covered(std::uint64_t wanted) const {
  return std::all_of(lanes_.begin(), lanes_.end(), [&](const auto& lane) { return wanted <= lane.second.covered; });
}

void LaneScheduler::take_renewals(TimePoint now, std::vector<std::int64_t>& ids, std::vector<std::int64_t>& attempts) {
  ids.clear();
  attempts.clear();
  for (auto& [id, attempt] : in_flight_) {
    if (attempt.renewing || attempt.leased + lease_ / 3 > now) continue;
    attempt.renewing = true;
    ids.push_back(id);
    attempts.push_back(attempt.attempt);
  }
}

std::vector<std::pair<std::int64_t, int>> LaneScheduler::renewal_ended(const std::vector<std::int64_t>& asked,
                                                                       const std::vector<std::int64_t>& renewed,
                                                                       bool failed, TimePoint started) {
  std::vector<std::pair<std::int64_t, int>> lost;
  for (const std::int64_t id : asked) {
    const auto it = in_flight_.find(id);
    if (it == in_flight_.end()) continue;  // answered meanwhile
    it->second.renewing = false;
    if (failed) continue;  // renewed again by the next statement
    if (std::find(renewed.begin(), renewed.end(), id) != renewed.end()) {
      it->second.leased = started;
    } else {
      lost.emplace_back(id, it->second.attempt);
      in_flight_.erase(it);
    }
  }
  return lost;
}

LaneScheduler::TimePoint LaneScheduler::next_renewal() const {
  auto next = TimePoint::max();
  for (const auto& [id, attempt] : in_flight_) {
    if (!attempt.renewing) next = std::min(next, attempt.leased + lease_ / 3);
  }
  return next;
}

}  // namespace tidemark::pipeline::relay
