#pragma once
// The relay's lanes: which claimed events go out next and how much the next claim may ask for,
// by the windows (max_in_flight, the relay's and each destination's) and the answer rate. Pure
// bookkeeping, without a database, a clock or Asio: the loop (relay.cpp) passes the time in,
// hands what it claims here and sends what this gives back, so the rules are unit-tested alone
// (pipeline/relay/tests/lane_scheduler_test.cpp).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/core/duration.hpp"
#include "pipeline/core/sink.hpp"

namespace tidemark::pipeline::relay {

// How many windows may be claimed and not yet answered: claims this far ahead make each
// statement record and claim hundreds of events, so its fixed cost (the commit's flush, above
// all) is spread over them.
inline constexpr std::size_t kClaimAhead = 8;
// The answer rate that sizes the queues is counted over periods this long.
inline constexpr Duration kRatePeriod = std::chrono::milliseconds(250);

class LaneScheduler {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // `window` is the relay's max_in_flight. Each of `destinations` gets a lane whose window is
  // its entry in `windows` (at least 1, at most `window`) or, without one, `window`.
  LaneScheduler(std::size_t window, const std::vector<std::string>& destinations,
                const std::map<std::string, std::size_t>& windows, Duration lease);

  // A loop begins at `now`: what a failed loop queued or had in flight is forgotten (their
  // leases run out), and no lane is covered. Requests sent stay counted: their answers come to
  // the next loop.
  void begin(TimePoint now);

  // The answer to the attempt `id` of `destination` was taken.
  void answered(const std::string& destination, std::int64_t id);

  // Sends queued events while the windows have room, one destination after another, starting
  // after the one served last; an event claimed before `now - lease / 2` is dropped instead
  // (its lease could run out before its attempt ends: it goes again when it does).
  void send_queued(TimePoint now, const std::function<void(OutboxEvent)>& send);

  // The requests sent in every lane whose answers have not been taken.
  std::size_t sending() const;
  bool has_queued() const;
  // Queued and sent, in every lane.
  std::size_t outstanding() const;

  // Once a rate period has ended at `now`, each queue's limit becomes what its window sends
  // in a quarter of a lease at the last period's answer rate: at least one window, at most
  // kClaimAhead - 1.
  void end_period(TimePoint now);
  // The relay's window plus its queue: how many may be claimed and not yet answered.
  std::size_t limit() const { return window_ + queue_limit_; }

  // What a claim may ask of each lane that may have due rows (wanted > its coverage), with
  // `outstanding` claimed or asked for across the relay and `requested(name)` asked for by
  // the statements running: up to each lane's window and queue, and to the relay's.
  std::map<std::string, std::size_t> capacities(std::uint64_t wanted, std::size_t outstanding,
                                                const std::function<std::size_t(const std::string&)>& requested) const;
  // A claim asked `capacities` (`capacity` in all) with a snapshot as of `view` and got
  // `claimed`, queued here as claimed at `claimed_at`. A lane it got fewer of than it asked,
  // while the limit across them did not bind, is covered up to `view`. True when more may be
  // due in a lane it asked of.
  bool claimed(const std::map<std::string, std::size_t>& capacities, std::size_t capacity,
               std::vector<OutboxEvent>& claimed, TimePoint claimed_at, std::uint64_t view);
  // Every lane is covered at `wanted`: nothing due was left behind.
  bool all_covered(std::uint64_t wanted) const;

  // The attempts sent whose leases are due for renewal at `now` (a third of a lease since it
  // began) and not being renewed: their ids and attempt numbers, marked as being renewed.
  void take_renewals(TimePoint now, std::vector<std::int64_t>& ids, std::vector<std::int64_t>& attempts);
  // A renewal of `asked` ended: `renewed` got new leases as of `started` unless it `failed`
  // (they are asked again). The attempts it could not renew are given back, as (id, attempt).
  std::vector<std::pair<std::int64_t, int>> renewal_ended(const std::vector<std::int64_t>& asked,
                                                          const std::vector<std::int64_t>& renewed, bool failed,
                                                          TimePoint started);
  // When the next lease not being renewed is due (TimePoint::max() when none).
  TimePoint next_renewal() const;

 private:
  struct Queued {
    OutboxEvent event;
    TimePoint claimed;
  };
  // One destination's part of the relay: its own window, queue and answer rate, so that a
  // slow destination fills only its own; the relay's window and queue bound them all.
  struct Lane {
    std::size_t window = 0;
    std::deque<Queued> queued;
    std::size_t sending = 0;
    std::size_t answers_in_period = 0;  // answers taken in the current rate period
    std::size_t queue_limit = 0;        // the queue the last period's answers allow
    std::uint64_t covered = 0;          // the loop's clock ticks a claim of it covered
  };
  // An attempt sent whose answer is not taken. It may outlast its lease (a destination that
  // answers at the end of request_timeout): its lease is renewed every third of a lease.
  struct InFlight {
    int attempt = 0;
    TimePoint leased;       // when its lease last began, or earlier
    bool renewing = false;  // a statement running renews it
  };

  std::size_t queue_for(std::size_t answers, std::size_t window) const;

  std::size_t window_;
  Duration lease_;
  std::map<std::string, Lane, std::less<>> lanes_;
  std::map<std::int64_t, InFlight> in_flight_;
  std::string last_served_;
  std::size_t queue_limit_;
  TimePoint period_end_{};
};

}  // namespace tidemark::pipeline::relay
