#include "pipeline/relay/relay.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <system_error>
#include <utility>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include "metrics/metrics.hpp"
#include "pipeline/async/offload.hpp"
#include "pipeline/core/backoff.hpp"
#include "pipeline/core/error_text.hpp"
#include "pipeline/store/pg/pg_text.hpp"
#include "pipeline/core/failpoint.hpp"
#include "pipeline/relay/lane_scheduler.hpp"
#include "pipeline/relay/listen_waker.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline::relay {

namespace asio = boost::asio;

namespace {

constexpr auto kPendingRefreshInterval = std::chrono::seconds(1);

std::string_view result_label(DeliveryResult::Status status) {
  switch (status) {
    case DeliveryResult::Status::kDelivered: return "delivered";
    case DeliveryResult::Status::kRetry: return "retry";
    case DeliveryResult::Status::kDead: return "dead";
  }
  return "unknown";
}

void prepare(pqxx::connection& connection) {
  connection.prepare("relay_claim", std::string(sql::kRelayClaim));
  connection.prepare("relay_mark_failed", std::string(sql::kRelayMarkFailed));
  connection.prepare("relay_renew", std::string(sql::kRelayRenew));
}

// Renews the leases of the attempts in flight `ids` (their attempt numbers in `attempts`) to
// `lease` from now; the ids renewed into `renewed`. Commits. On a database thread.
void renew(pqxx::connection& connection, Duration lease, const std::vector<std::int64_t>& ids,
           const std::vector<std::int64_t>& attempts, std::vector<std::int64_t>& renewed) {
  renewed.clear();  // an attempt retried starts again
  if (ids.empty()) return;
  pqxx::nontransaction txn(connection);
  for (const auto& row : txn.exec_prepared("relay_renew", db::bigint_array_literal(ids),
                                           db::bigint_array_literal(attempts), static_cast<long long>(lease.count()))) {
    renewed.push_back(row[0].as<std::int64_t>());
  }
}

}  // namespace

// Statements in flight at once, each on a connection (and a database thread) of its own:
// while one waits for its commit to reach the disk, the next records the answers that came
// in meanwhile and claims more, and PostgreSQL flushes commits that meet with one write.
constexpr std::size_t kDatabaseSlots = 2;

std::vector<std::string> destinations_of(const Sinks& sinks) {
  std::vector<std::string> names;
  for (const auto& [name, sink] : sinks) names.push_back(name);
  return names;
}

// The loop's Asio state. The loop runs on a strand of the io_context it was started on; the
// libpqxx work runs on `database_threads`, the only threads that touch the connection pool.
// Which events go out and how much to claim is the lane scheduler's (lane_scheduler.hpp);
// the LISTEN connection is the waker's (listen_waker.hpp).
struct Relay::LoopState {
  using Strand = ListenWaker::Strand;

  // One statement's work, handed to a database thread and back to the loop: the answers it
  // records, the events it claims and, when due, the pending counts. On the strand, except
  // while the statement runs.
  struct Slot {
    bool running = false;
    bool finished = false;  // ended; its results are not yet taken by the loop
    std::exception_ptr failure;
    std::vector<Answer> answers;
    std::vector<long long> delays;
    std::map<std::string, std::size_t> capacities;  // what it may claim of each destination asked
    std::size_t capacity = 0;                       // and in all
    std::vector<OutboxEvent> claimed;
    // The attempts in flight whose leases it renews (by event id, with their attempt
    // numbers), and those it renewed.
    std::vector<std::int64_t> renew_ids;
    std::vector<std::int64_t> renew_attempts;
    std::vector<std::int64_t> renewed;
    std::chrono::steady_clock::time_point started;  // before the claim: its leases began later
    std::uint64_t view = 0;  // the loop's `clock` at the start: what its snapshot includes
    bool count = false;
    std::map<std::string, double> pending;
    std::function<void(pqxx::connection&)> record_and_claim;
    std::function<void(pqxx::connection&)> count_pending;
    std::optional<asio::steady_timer> outage;  // the wait a database outage out
  };

  explicit LoopState(const Relay& relay)
      : lanes(relay.options_.config.max_in_flight, destinations_of(relay.sinks_), relay.options_.windows,
              relay.options_.lease),
        waker(relay.database_.url(), database_threads, [this] { if (wake) wake->cancel(); },
              relay.options_.listen_retry, relay.options_.poll_interval) {}

  static asio::awaitable<void> loop(Relay* relay);
  // The loop's body, and what it does when a statement ends; both on the strand.
  static void start_slot(Relay* relay, Slot* slot);
  static asio::awaitable<void> run_slot(Relay* relay, Slot* slot);
  // One delivery of `event` through `sink`, spawned by send() on the sink's own executor when
  // it has one, else on the strand; its answer goes to answered(). A delivery outlives the
  // loop that sent it when that loop fails: the next loop records its answer. The sinks end
  // (their threads joined) before the relay's answers and mutex do.
  static asio::awaitable<void> deliver(Relay* relay, Sink* sink, OutboxEvent event);
  // Runs `*work` on a pooled connection with database retries; for ever in run() (see
  // RelayOptions::database_retries), throws when stopping or in drain().
  static asio::awaitable<void> with_database(Relay* relay, const char* what,
                                             const std::function<void(pqxx::connection&)>* work,
                                             asio::steady_timer* outage);
  // Waits `how_long` on `timer`, or until the wait is cancelled (an answer, a statement's end
  // or stop()); `*expired` says which.
  static asio::awaitable<void> wait(asio::steady_timer* timer, Duration how_long, bool* expired);
  // What the statements running may still claim of `destination`.
  std::size_t requested_of(const std::string& destination) const;

  asio::thread_pool database_threads{kDatabaseSlots};
  std::optional<Strand> executor;          // guarded by the relay's mutex_: the running loop's
  std::optional<asio::steady_timer> wake;  // on the strand: the loop's wait for something to do
  std::array<Slot, kDatabaseSlots> slots;  // on the strand
  // On the strand. Claimed ahead, not yet sent: an answer frees a place in the window and
  // the next event goes at once, without waiting for a statement. Its requests sent are kept
  // across loops: the answers of a loop that failed are taken (and recorded) by the next one.
  LaneScheduler lanes;
  ListenWaker waker;  // run() only, on the strand
};

Relay::Relay(std::string database_url, Sinks sinks, RelayOptions options, metrics::Metrics* metrics)
    : options_(std::move(options)),
      metrics_(metrics),
      database_(std::move(database_url), options_.database_retries, prepare),
      rng_(options_.seed),
      sinks_(std::move(sinks)) {
  state_ = std::make_unique<LoopState>(*this);
  for (LoopState::Slot& slot : state_->slots) {
    slot.record_and_claim = [this, &slot](pqxx::connection& connection) {
      renew(connection, options_.lease, slot.renew_ids, slot.renew_attempts, slot.renewed);
      record_and_claim(connection, slot.answers, slot.delays, slot.capacities, slot.capacity, slot.claimed);
    };
    slot.count_pending = [this, &slot](pqxx::connection& connection) { count_pending(connection, slot.pending); };
  }
  if (metrics_ == nullptr) return;
  // Every series exists from the start, so that increase() and the alerts see the first
  // dead event as a change from 0 rather than as a new series.
  for (const auto& [destination, sink] : sinks_) {
    for (const auto status :
         {DeliveryResult::Status::kDelivered, DeliveryResult::Status::kRetry, DeliveryResult::Status::kDead}) {
      metrics_->outbox_deliveries_total.Add(
          {{"destination", destination}, {"result", std::string(result_label(status))}});
    }
    metrics_->outbox_delivery_duration_seconds.Add({{"destination", destination}}, metrics::duration_buckets());
  }
}

Relay::~Relay() = default;

RelayStats Relay::drain() { return run_here(true); }

RelayStats Relay::run() { return run_here(false); }

void Relay::start(asio::io_context& io, std::function<void(std::exception_ptr)> ended) {
  begin(io, false, std::move(ended));
}

RelayStats Relay::run_here(bool once) {
  asio::io_context io(1);
  std::exception_ptr failure;
  begin(io, once, [&failure](std::exception_ptr error) { failure = std::move(error); });
  io.run();  // until the loop has ended
  if (failure) std::rethrow_exception(failure);
  return stats_;
}

void Relay::begin(asio::io_context& io, bool once, std::function<void(std::exception_ptr)> ended) {
  stats_ = {};
  once_ = once;
  const LoopState::Strand strand = asio::make_strand(io);
  state_->wake.emplace(strand);
  for (LoopState::Slot& slot : state_->slots) slot.outage.emplace(strand);
  {
    std::lock_guard lock(mutex_);
    state_->executor = strand;
  }
  asio::co_spawn(strand, LoopState::loop(this), [this, ended = std::move(ended)](std::exception_ptr error) {
    {
      std::lock_guard lock(mutex_);
      state_->executor.reset();  // no more wakes: this io_context may go now
    }
    state_->wake.reset();
    for (LoopState::Slot& slot : state_->slots) slot.outage.reset();
    state_->waker.end();
    ended(std::move(error));
  });
}

void Relay::stop() {
  std::lock_guard lock(mutex_);
  stop_requested_ = true;
  // The loop looks at the flag before each wait; the wait it is in (if any) is cancelled.
  if (state_->executor) {
    asio::post(*state_->executor, [state = state_.get()] {
      if (state->wake) state->wake->cancel();
      for (LoopState::Slot& slot : state->slots) {
        if (slot.outage) slot.outage->cancel();
      }
    });
  }
}

bool Relay::stop_requested() {
  std::lock_guard lock(mutex_);
  return stop_requested_;
}

void Relay::answered(Answer answer) {
  std::lock_guard lock(mutex_);
  answers_.push_back(std::move(answer));
  if (state_->executor) {
    asio::post(*state_->executor, [state = state_.get()] {
      if (state->wake) state->wake->cancel();
    });
  }
}

asio::awaitable<void> Relay::LoopState::wait(asio::steady_timer* timer, Duration how_long, bool* expired) {
  timer->expires_after(how_long);
  boost::system::error_code cancelled;
  co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, cancelled));
  *expired = !cancelled;
}

asio::awaitable<void> Relay::LoopState::run_slot(Relay* relay, Slot* slot) {
  co_await with_database(relay, "record delivery results and claim due outbox events", &slot->record_and_claim,
                         &*slot->outage);
  if (slot->count) co_await with_database(relay, "count pending outbox events", &slot->count_pending, &*slot->outage);
}

void Relay::LoopState::start_slot(Relay* relay, Slot* slot) {
  LoopState* state = relay->state_.get();
  slot->running = true;
  slot->claimed.clear();
  slot->started = std::chrono::steady_clock::now();
  asio::co_spawn(*state->executor, run_slot(relay, slot),
                 asio::bind_executor(*state->executor, [state, slot](std::exception_ptr failure) {
                   slot->failure = std::move(failure);
                   slot->finished = true;
                   if (state->wake) state->wake->cancel();
                 }));
}

std::size_t Relay::LoopState::requested_of(const std::string& destination) const {
  std::size_t requested = 0;
  for (const Slot& slot : slots) {
    if (!slot.running) continue;
    if (const auto it = slot.capacities.find(destination); it != slot.capacities.end()) requested += it->second;
  }
  return requested;
}

asio::awaitable<void> Relay::LoopState::loop(Relay* relay) {
  Relay& self = *relay;
  LoopState& state = *self.state_;
  // Taken from the sinks, not yet handed to a statement (the slots were busy).
  std::vector<Answer> answered;
  std::exception_ptr failure;  // of a statement: the loop ends once the others have ended too
  // Due rows of a destination may be waiting while wanted > its lane's coverage. Each reason
  // to look again (the start, answers recorded, a claim that got all it asked for, the
  // poll, a notification) takes the next tick of `clock` into `wanted`; a claim that found
  // fewer of a destination than it asked for covers that destination's ticks before its
  // start, which its snapshot includes. A statement whose snapshot predates another's marks
  // cannot see their successors, so it covers no later tick.
  std::uint64_t clock = 1;
  std::uint64_t wanted = 1;
  bool expired = false;
  auto next_refresh = std::chrono::steady_clock::now();
  state.lanes.begin(next_refresh);
  state.waker.begin(*state.executor);
  const auto send = [&self](OutboxEvent event) { self.send(std::move(event)); };
  const auto requested_of = [&state](const std::string& destination) { return state.requested_of(destination); };
  for (;;) {
    bool stopping = false;
    {
      std::lock_guard lock(self.mutex_);
      for (auto& answer : self.answers_) {
        state.lanes.answered(answer.destination, answer.id);
        answered.push_back(std::move(answer));
      }
      self.answers_.clear();
      stopping = self.stop_requested_;
    }

    // What the statements that ended recorded and claimed.
    bool running = false;
    std::size_t requested = 0;  // what the statements still running may claim
    for (Slot& slot : state.slots) {
      if (slot.finished) {
        slot.finished = false;
        slot.running = false;
        for (const auto& [id, attempt] :
             state.lanes.renewal_ended(slot.renew_ids, slot.renewed, slot.failure != nullptr, slot.started)) {
          // Fenced out: an operator re-drove the event, or the lease ran out before the
          // renewal and another claim took it. Nothing can call back what was sent.
          spdlog::warn("outbox event {}: the lease of attempt {} in flight was lost before it was renewed; "
                       "the event may be sent again beside it",
                       id, attempt);
        }
        if (slot.failure) {
          // Unrecorded, these answers' leases run out and the events go again (at least once).
          if (!failure) failure = slot.failure;
          slot.failure = nullptr;
          continue;
        }
        self.account(slot.answers);
        if (slot.count) self.publish_pending(slot.pending);
        // More may be due where it got all it asked for, and the successors of what it
        // recorded where it did not look (a claim sees those it made due itself).
        bool more = state.lanes.claimed(slot.capacities, slot.capacity, slot.claimed, slot.started, slot.view);
        more = more || std::any_of(slot.answers.begin(), slot.answers.end(),
                                   [&slot](const Answer& answer) { return !slot.capacities.contains(answer.destination); });
        if (more) wanted = ++clock;
      } else if (slot.running) {
        running = true;
        requested += slot.capacity;
      }
    }
    if (!failure) state.lanes.send_queued(std::chrono::steady_clock::now(), send);

    // Statements on the idle slots: the answers in hand, and claims while fewer than the
    // window plus the queue the answer rate allows are claimed and not yet answered.
    const auto now = std::chrono::steady_clock::now();
    state.lanes.end_period(now);
    const std::size_t limit = state.lanes.limit();
    for (Slot& slot : state.slots) {
      if (failure || slot.running) continue;
      const std::size_t outstanding = requested + state.lanes.outstanding();
      // Each destination that may have due rows, up to what its own window and queue allow;
      // the limit across them (by due time, in the claim) is what the relay's allow.
      slot.capacities.clear();
      if (!stopping) slot.capacities = state.lanes.capacities(wanted, outstanding, requested_of);
      const bool claim = !slot.capacities.empty();
      const bool count = self.metrics_ != nullptr && now >= next_refresh;
      state.lanes.take_renewals(now, slot.renew_ids, slot.renew_attempts);
      if (answered.empty() && !claim && !count && slot.renew_ids.empty()) break;
      slot.answers = std::move(answered);
      answered.clear();
      self.settle(slot.answers, slot.delays);
      slot.capacity = 0;
      for (const auto& [name, capacity] : slot.capacities) slot.capacity += capacity;
      slot.capacity = std::min(slot.capacity, claim ? limit - outstanding : 0);
      slot.count = count;
      slot.view = clock;
      if (count) next_refresh = now + kPendingRefreshInterval;
      requested += slot.capacity;
      running = true;
      start_slot(relay, &slot);
    }

    // No suspension from the look at the queue to the wait: an answer, a statement's end or
    // a stop() that comes after the look cancels the wait, on this strand.
    const bool busy = running || state.lanes.sending() > 0 || !answered.empty() || state.lanes.has_queued();
    if (!self.once_ && !failure && state.waker.look(stopping)) {
      wanted = ++clock;
      continue;
    }
    {
      std::lock_guard lock(self.mutex_);
      if (!self.answers_.empty()) continue;
      if (state.waker.connecting()) {
        // its completion touches this loop's state: wait for it
      } else if (failure && !running) {
        break;
      } else if (!busy && (self.stop_requested_ || (self.once_ && state.lanes.all_covered(wanted)))) {
        break;
      }
    }
    Duration how_long = self.options_.poll_interval;
    const auto renewal = state.lanes.next_renewal();
    if (renewal != std::chrono::steady_clock::time_point::max() && !failure &&
        std::any_of(state.slots.begin(), state.slots.end(), [](const Slot& slot) { return !slot.running; })) {
      // Awake when a lease in flight is due for renewal (while both slots are busy, the end
      // of a statement wakes the loop).
      const auto until_renewal = std::chrono::duration_cast<Duration>(renewal - std::chrono::steady_clock::now());
      how_long = std::clamp(until_renewal, Duration::zero(), how_long);
    }
    if (!self.once_ && !state.waker.connected() && !state.waker.connecting()) {
      // Awake when the LISTEN connection is due to be made again.
      const auto until_listen =
          std::chrono::duration_cast<Duration>(state.waker.next_connect() - std::chrono::steady_clock::now());
      how_long = std::clamp(until_listen, Duration::zero(), how_long);
    }
    co_await LoopState::wait(&*state.wake, how_long, &expired);
    if (expired) wanted = ++clock;
  }
  state.waker.end();
  if (failure) std::rethrow_exception(failure);
  if (self.metrics_ != nullptr) {
    Slot& slot = state.slots.front();
    co_await with_database(relay, "count pending outbox events", &slot.count_pending, &*slot.outage);
    self.publish_pending(slot.pending);
  }
}

asio::awaitable<void> Relay::LoopState::with_database(Relay* relay, const char* what,
                                                  const std::function<void(pqxx::connection&)>* work,
                                                  asio::steady_timer* outage) {
  Relay& self = *relay;
  const std::function<void()> attempt = [&self, what, work] { self.database_.with_connection(what, *work); };
  for (;;) {
    try {
      co_await async::offload(&self.state_->database_threads, &attempt);
      if (self.waiting_for_database_.exchange(false)) spdlog::info("the outbox relay reaches the database again");
      co_return;
    } catch (const db::RetriesExhausted& error) {
      // A long outage is the world failing, not the relay: a serving relay waits it out, with
      // the answers in hand kept for when it ends. drain() (relay --once) reports it instead.
      if (self.once_ || self.stop_requested()) throw;
      self.waiting_for_database_ = true;
      if (const auto summary = self.outage_log_.admit()) {
        spdlog::error("{}; the outbox relay keeps waiting for the database{}", error.what(), *summary);
      }
    }
    // Cancelled by stop(), which then ends the wait for the database with the next failure.
    bool expired = false;
    co_await LoopState::wait(outage, self.options_.database_retries.max_delay, &expired);
  }
}

void Relay::settle(std::vector<Answer>& answers, std::vector<long long>& delays) {
  delays.assign(answers.size(), 0);
  for (std::size_t i = 0; i < answers.size(); ++i) {
    auto& answer = answers[i];
    // Whatever a sink put there (a receiver's body, cut anywhere), last_error must store.
    if (answer.result.status != DeliveryResult::Status::kDelivered) {
      answer.result.error = bounded_error_text(redact_urls(answer.result.error));
    }
    switch (answer.result.status) {
      case DeliveryResult::Status::kDelivered:
        failpoint("relay_after_send");
        break;
      case DeliveryResult::Status::kRetry:
        // Out of attempts: a retryable failure on the last attempt is final too.
        if (answer.attempt >= options_.config.max_attempts) {
          answer.result.status = DeliveryResult::Status::kDead;
          answer.result.error += " (gave up after " + std::to_string(answer.attempt) + " attempts)";
        } else {
          delays[i] = retry_delay(answer).count();
        }
        break;
      case DeliveryResult::Status::kDead:
        break;
    }
  }
}

void Relay::record_and_claim(pqxx::connection& connection, const std::vector<Answer>& answers,
                             const std::vector<long long>& delays, const std::map<std::string, std::size_t>& capacities,
                             std::size_t capacity, std::vector<OutboxEvent>& claimed) {
  std::vector<std::int64_t> delivered;
  std::vector<std::int64_t> delivered_attempts;
  for (const auto& answer : answers) {
    if (answer.result.status != DeliveryResult::Status::kDelivered) continue;
    delivered.push_back(answer.id);
    delivered_attempts.push_back(answer.attempt);
  }
  const std::string delivered_ids = db::bigint_array_literal(delivered);

  // Each statement commits on its own: every mark is idempotent and fenced, and the claim
  // is one atomic UPDATE whose lease is committed before anything is sent. Failures (rare)
  // are recorded first, one statement each; the deliveries are recorded by the claim itself,
  // so the usual loop costs one round trip. The successor of an event delivered just now is
  // claimable in that same statement (claim.sql).
  claimed.clear();  // an attempt retried starts again
  pqxx::nontransaction txn(connection);
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const auto& answer = answers[i];
    if (answer.result.status == DeliveryResult::Status::kDelivered) continue;
    const char* status = answer.result.status == DeliveryResult::Status::kDead ? "dead" : "pending";
    txn.exec_prepared("relay_mark_failed", answer.id, answer.attempt, status, delays[i], answer.result.error);
  }
  if (capacity > 0 || delivered_ids.size() > 2) {
    std::vector<std::string> destinations;
    std::vector<std::int64_t> limits;
    for (const auto& [name, limit] : capacities) {
      destinations.push_back(name);
      limits.push_back(static_cast<std::int64_t>(limit));
    }
    const auto rows = txn.exec_prepared("relay_claim", db::text_array_literal(destinations),
                                        db::bigint_array_literal(limits), static_cast<long long>(capacity),
                                        static_cast<long long>(options_.lease.count()), delivered_ids,
                                        db::bigint_array_literal(delivered_attempts));
    for (const auto& row : rows) {
      OutboxEvent event;
      event.id = row[0].as<std::int64_t>();
      event.destination = row[1].as<std::string>();
      event.idempotency_key = row[2].as<std::string>();
      event.partition_key = row[3].is_null() ? std::string() : row[3].as<std::string>();
      event.sequence = row[4].is_null() ? 0 : row[4].as<std::int64_t>();
      event.payload = row[5].as<std::string>();
      event.attempt = row[6].as<int>();
      claimed.push_back(std::move(event));
    }
  }
}

void Relay::send(OutboxEvent event) {
  Sink* sink = sinks_.at(event.destination).get();
  asio::awaitable<void> delivery = LoopState::deliver(this, sink, std::move(event));
  if (const std::optional<asio::any_io_executor> own = sink->executor()) {
    asio::co_spawn(*own, std::move(delivery), asio::detached);
  } else {
    asio::co_spawn(*state_->executor, std::move(delivery), asio::detached);
  }
}

asio::awaitable<void> Relay::LoopState::deliver(Relay* relay, Sink* sink, OutboxEvent event) {
  Answer answer;
  answer.id = event.id;
  answer.destination = event.destination;
  answer.idempotency_key = event.idempotency_key;
  answer.attempt = event.attempt;
  const auto started = std::chrono::steady_clock::now();
  try {
    asio::awaitable<DeliveryResult> delivery = sink->deliver(std::move(event));  // named: not a temporary of the co_await
    answer.result = co_await std::move(delivery);
  } catch (const std::exception& error) {
    // A sink's own failure, not the destination's answer: the event goes again.
    answer.result = DeliveryResult::retry(std::string("internal error: ") + error.what());
  }
  answer.elapsed = std::chrono::steady_clock::now() - started;
  relay->answered(std::move(answer));
}

Duration Relay::retry_delay(const Answer& answer) {
  // The destination's Retry-After wins over our own schedule: sending earlier would only
  // be refused again.
  // Capped whatever the sink passed, so the conversion cannot overflow.
  if (answer.result.retry_after) {
    const auto wish = std::clamp(*answer.result.retry_after, std::chrono::seconds(0), kMaxRetryAfter);
    return std::chrono::duration_cast<Duration>(wish);
  }
  return backoff_delay(options_.config.base_delay, options_.config.max_delay, answer.attempt, rng_);
}

void Relay::account(const std::vector<Answer>& answers) {
  for (const auto& answer : answers) {
    switch (answer.result.status) {
      case DeliveryResult::Status::kDelivered:
        ++stats_.delivered;
        failpoint("relay_after_mark");
        spdlog::debug("delivered {} (event {}, attempt {})", answer.idempotency_key, answer.id, answer.attempt);
        break;
      case DeliveryResult::Status::kRetry:
        ++stats_.retried;
        spdlog::debug("retrying {} (event {}, attempt {}): {}", answer.idempotency_key, answer.id, answer.attempt,
                      answer.result.error);
        break;
      case DeliveryResult::Status::kDead:
        ++stats_.dead;
        spdlog::warn("outbox event {} ({}) is dead after attempt {}: {}; re-drive it with `tidemark outbox retry {}`",
                     answer.id, answer.idempotency_key, answer.attempt, answer.result.error, answer.id);
        break;
    }
    if (metrics_ != nullptr) {
      metrics_->outbox_deliveries_total
          .Add({{"destination", answer.destination}, {"result", std::string(result_label(answer.result.status))}})
          .Increment();
      metrics_->outbox_delivery_duration_seconds.Add({{"destination", answer.destination}}, metrics::duration_buckets())
          .Observe(std::chrono::duration<double>(answer.elapsed).count());
    }
  }
}

void Relay::count_pending(pqxx::connection& connection, std::map<std::string, double>& pending) {
  pending.clear();  // an attempt retried starts again
  for (const auto& [name, sink] : sinks_) pending[name] = 0;
  pqxx::read_transaction txn(connection);
  for (const auto& row : txn.exec(std::string(sql::kRelayPendingCounts))) {
    pending[row[0].as<std::string>()] = row[1].as<double>();
  }
}

void Relay::publish_pending(const std::map<std::string, double>& pending) {
  for (const auto& [destination, count] : pending) {
    metrics_->outbox_pending.Add({{"destination", destination}}).Set(count);
  }
}

}  // namespace tidemark::pipeline::relay
