#include "pipeline/relay/relay.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <system_error>
#include <utility>

#include <poll.h>
#include <unistd.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
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
#include "pipeline/store/outbox.hpp"
#include "pipeline/store/pg/pg_text.hpp"
#include "pipeline/core/failpoint.hpp"
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
// How many windows (max_in_flight, the relay's and each destination's) may be claimed and
// not yet answered: claims this far ahead make each statement record and claim hundreds of
// events, so its fixed cost (the commit's flush, above all) is spread over them.
constexpr std::size_t kClaimAhead = 8;
// The answer rate that sizes the queue is counted over periods this long.
constexpr auto kRatePeriod = std::chrono::milliseconds(250);
constexpr Duration kMaxListenRetry = std::chrono::seconds(30);

// The loop's Asio state. The loop runs on a strand of the io_context it was started on; the
// libpqxx work runs on `database_threads`, the only threads that touch the connection pool.
struct Relay::Async {
  using Strand = asio::strand<asio::io_context::executor_type>;

  // One statement's work, handed to a database thread and back to the loop: the answers it
  // records, the events it claims and, when due, the pending counts. On the strand, except
  // while the statement runs.
  struct Task {
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

  static asio::awaitable<void> loop(Relay* relay);
  // The loop's body, and what it does when a statement ends; both on the strand.
  static void start_task(Relay* relay, Task* task);
  static asio::awaitable<void> run_task(Relay* relay, Task* task);
  // Runs `*work` on a pooled connection with database retries; for ever in run() (see
  // RelayOptions::database_retries), throws when stopping or in drain().
  static asio::awaitable<void> with_database(Relay* relay, const char* what,
                                             const std::function<void(pqxx::connection&)>* work,
                                             asio::steady_timer* outage);
  // Waits `how_long` on `timer`, or until the wait is cancelled (an answer, a statement's end
  // or stop()); `*expired` says which.
  static asio::awaitable<void> wait(asio::steady_timer* timer, Duration how_long, bool* expired);
  // Sends queued events while the windows have room, one destination after another.
  void send_queued(Relay& relay);
  // What the statements running may still claim of `destination`.
  std::size_t requested_of(const std::string& destination) const;
  // The requests sent in every lane whose answers the loop has not taken yet.
  std::size_t sending() const;
  // run() only, on the strand: true when a notification came. Connects the LISTEN
  // connection when it is due (in the background), reads what its socket holds and awaits
  // more beside the wake timer; any failure drops it and polling goes on.
  bool listen(Relay& relay, bool stopping);
  static asio::awaitable<void> connect_listener(Async* async);
  void listener_connected(Relay& relay, std::exception_ptr failure);
  void drop_listener(Relay& relay, const std::string& why);

  asio::thread_pool database_threads{kDatabaseSlots};
  std::optional<Strand> executor;          // guarded by the relay's mutex_: the running loop's
  std::optional<asio::steady_timer> wake;  // on the strand: the loop's wait for something to do
  std::array<Task, kDatabaseSlots> tasks;  // on the strand
  // On the strand. Claimed ahead, not yet sent: an answer frees a place in the window and
  // the next event goes at once, without waiting for a statement. A queue holds what its
  // window sends in a quarter of a lease (at least one window, at most kClaimAhead - 1), so
  // an event's lease outlasts its wait here and its attempt; one claimed more than half a
  // lease ago (the receiver slowed down) is not sent: its lease runs out and it goes again.
  struct Queued {
    OutboxEvent event;
    std::chrono::steady_clock::time_point claimed;
  };
  // On the strand: one destination's part of the relay. Each has its own window (its
  // max_in_flight, or the relay's), queue and answer rate, so that a slow destination fills
  // only its own; the relay's window and queue bound them all together.
  struct Lane {
    std::size_t window = 0;
    std::deque<Queued> queued;
    // Requests sent whose answers the loop has not taken yet. Kept across loops: the
    // answers of a loop that failed are taken (and recorded) by the next one.
    std::size_t sending = 0;
    std::size_t answers_in_period = 0;  // answers taken in the current rate period
    std::size_t queue_limit = 0;        // the queue the last period's answers allow
    std::uint64_t covered = 0;          // the loop's `clock` ticks a claim of it covered (loop)
  };
  std::map<std::string, Lane, std::less<>> lanes;  // by destination: one per sink
  // On the strand: the attempts this loop sent whose answers it has not taken, by event id.
  // An attempt may outlast its lease (a destination that answers at the end of
  // request_timeout, a sink slower than its timeouts): its lease is renewed every third of a
  // lease while it runs, so that no relay claims the event and sends it again beside it.
  struct InFlight {
    int attempt = 0;
    std::chrono::steady_clock::time_point leased;  // when its lease last began, or earlier
    bool renewing = false;                         // a statement running renews it
  };
  std::map<std::int64_t, InFlight> in_flight;
  // The attempts due for renewal into `task`, and when the next one not being renewed is due
  // (time_point::max() when none).
  void take_renewals(Duration lease, Task& task);
  std::chrono::steady_clock::time_point next_renewal(Duration lease) const;
  std::string last_served;                         // on the strand: the lane send_queued served last

  // The LISTEN connection (run() only) and a duplicate of its socket, on the strand; while
  // `listen_connecting`, the database thread makes `connecting` with `listen_connect`.
  std::unique_ptr<pqxx::connection> listener;
  std::optional<asio::posix::stream_descriptor> listen_socket;
  std::unique_ptr<pqxx::connection> connecting;
  std::function<void()> listen_connect;
  bool listen_connecting = false;
  bool listen_armed = false;  // a wait on listen_socket is outstanding
  bool listen_fresh = false;  // connected since the last look
  std::chrono::steady_clock::time_point listen_next{};  // when to connect it again
  std::optional<DoublingDelay> listen_delay;            // set by the loop, from listen_retry
};

Relay::Relay(std::string database_url, Sinks sinks, RelayOptions options, metrics::Metrics* metrics)
    : options_(std::move(options)),
      metrics_(metrics),
      database_(std::move(database_url), options_.database_retries, prepare),
      rng_(options_.seed),
      async_(std::make_unique<Async>()),
      sinks_(std::move(sinks)) {
  for (Async::Task& task : async_->tasks) {
    task.record_and_claim = [this, &task](pqxx::connection& connection) {
      renew(connection, options_.lease, task.renew_ids, task.renew_attempts, task.renewed);
      record_and_claim(connection, task.answers, task.delays, task.capacities, task.capacity, task.claimed);
    };
    task.count_pending = [this, &task](pqxx::connection& connection) { count_pending(connection, task.pending); };
  }
  for (const auto& [name, sink] : sinks_) {
    const auto own = options_.windows.find(name);
    async_->lanes[name].window = own == options_.windows.end()
                                     ? options_.config.max_in_flight
                                     : std::clamp<std::size_t>(own->second, 1, options_.config.max_in_flight);
  }
  async_->listen_connect = [this] {
    auto connection = db::connect(database_.url());
    pqxx::nontransaction(*connection).exec(std::string("LISTEN ") + kOutboxChannel);
    async_->connecting = std::move(connection);
  };
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
  const Async::Strand strand = asio::make_strand(io);
  async_->wake.emplace(strand);
  for (Async::Task& task : async_->tasks) task.outage.emplace(strand);
  {
    std::lock_guard lock(mutex_);
    async_->executor = strand;
  }
  asio::co_spawn(strand, Async::loop(this), [this, ended = std::move(ended)](std::exception_ptr error) {
    {
      std::lock_guard lock(mutex_);
      async_->executor.reset();  // no more wakes: this io_context may go now
    }
    async_->wake.reset();
    for (Async::Task& task : async_->tasks) task.outage.reset();
    ended(std::move(error));
  });
}

void Relay::stop() {
  std::lock_guard lock(mutex_);
  stop_requested_ = true;
  // The loop looks at the flag before each wait; the wait it is in (if any) is cancelled.
  if (async_->executor) {
    asio::post(*async_->executor, [async = async_.get()] {
      if (async->wake) async->wake->cancel();
      for (Async::Task& task : async->tasks) {
        if (task.outage) task.outage->cancel();
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
  if (async_->executor) {
    asio::post(*async_->executor, [async = async_.get()] {
      if (async->wake) async->wake->cancel();
    });
  }
}

asio::awaitable<void> Relay::Async::wait(asio::steady_timer* timer, Duration how_long, bool* expired) {
  timer->expires_after(how_long);
  boost::system::error_code cancelled;
  co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, cancelled));
  *expired = !cancelled;
}

asio::awaitable<void> Relay::Async::run_task(Relay* relay, Task* task) {
  co_await with_database(relay, "record delivery results and claim due outbox events", &task->record_and_claim,
                         &*task->outage);
  if (task->count) co_await with_database(relay, "count pending outbox events", &task->count_pending, &*task->outage);
}

void Relay::Async::start_task(Relay* relay, Task* task) {
  Async* async = relay->async_.get();
  task->running = true;
  task->claimed.clear();
  task->started = std::chrono::steady_clock::now();
  asio::co_spawn(*async->executor, run_task(relay, task),
                 asio::bind_executor(*async->executor, [async, task](std::exception_ptr failure) {
                   task->failure = std::move(failure);
                   task->finished = true;
                   if (async->wake) async->wake->cancel();
                 }));
}

void Relay::Async::send_queued(Relay& relay) {
  const auto stale = std::chrono::steady_clock::now() - relay.options_.lease / 2;
  const std::size_t window = relay.options_.config.max_in_flight;
  std::size_t sending = this->sending();
  // One event of each destination with room in turn, starting after the one served last:
  // while the relay's window is full, places free one at a time, and each goes to the next
  // destination that has an event queued, not always to the first.
  for (bool sent = true; sent && sending < window;) {
    sent = false;
    auto it = lanes.upper_bound(last_served);
    for (std::size_t looked = 0; looked < lanes.size() && sending < window; ++looked, ++it) {
      if (it == lanes.end()) it = lanes.begin();
      auto& [name, lane] = *it;
      while (!lane.queued.empty() && lane.queued.front().claimed < stale) {
        spdlog::debug("not sending outbox event {} ({}): claimed too long ago, it goes again when its lease runs out",
                      lane.queued.front().event.id, lane.queued.front().event.idempotency_key);
        lane.queued.pop_front();
      }
      if (lane.queued.empty() || lane.sending >= lane.window) continue;
      in_flight[lane.queued.front().event.id] = {lane.queued.front().event.attempt, lane.queued.front().claimed};
      relay.send(std::move(lane.queued.front().event));
      lane.queued.pop_front();
      ++lane.sending;
      ++sending;
      last_served = name;
      sent = true;
    }
  }
}

void Relay::Async::take_renewals(Duration lease, Task& task) {
  task.renew_ids.clear();
  task.renew_attempts.clear();
  const auto now = std::chrono::steady_clock::now();
  for (auto& [id, attempt] : in_flight) {
    if (attempt.renewing || attempt.leased + lease / 3 > now) continue;
    attempt.renewing = true;
    task.renew_ids.push_back(id);
    task.renew_attempts.push_back(attempt.attempt);
  }
}

std::chrono::steady_clock::time_point Relay::Async::next_renewal(Duration lease) const {
  auto next = std::chrono::steady_clock::time_point::max();
  for (const auto& [id, attempt] : in_flight) {
    if (!attempt.renewing) next = std::min(next, attempt.leased + lease / 3);
  }
  return next;
}

std::size_t Relay::Async::sending() const {
  std::size_t sending = 0;
  for (const auto& [name, lane] : lanes) sending += lane.sending;
  return sending;
}

std::size_t Relay::Async::requested_of(const std::string& destination) const {
  std::size_t requested = 0;
  for (const Task& task : tasks) {
    if (!task.running) continue;
    if (const auto it = task.capacities.find(destination); it != task.capacities.end()) requested += it->second;
  }
  return requested;
}

asio::awaitable<void> Relay::Async::connect_listener(Async* async) {
  co_await async::offload(&async->database_threads, &async->listen_connect);
}

bool Relay::Async::listen(Relay& relay, bool stopping) {
  if (!listener) {
    if (!stopping && !listen_connecting && std::chrono::steady_clock::now() >= listen_next) {
      listen_connecting = true;
      asio::co_spawn(*executor, connect_listener(this),
                     asio::bind_executor(*executor, [this, &relay](std::exception_ptr failure) {
                       listener_connected(relay, std::move(failure));
                     }));
    }
    return false;
  }
  if (listen_armed) return false;  // the socket has not become readable since the last read
  // Just connected: what was committed while nobody listened is looked for once.
  bool notified = std::exchange(listen_fresh, false);
  try {
    // Until the socket holds nothing more: one read may stop short of what came (a backend
    // that was terminated sends its error, then closes; the close shows on the next read).
    for (;;) {
      notified = listener->get_notifs() > 0 || notified;
      if (!listener->is_open()) throw std::runtime_error("the connection is closed");
      pollfd readable{listener->sock(), POLLIN, 0};
      if (::poll(&readable, 1, 0) <= 0) break;
    }
  } catch (const std::exception& error) {
    drop_listener(relay, error.what());
    return false;
  }
  // After the read: what comes from now on makes the socket readable again. The handler
  // only ends the wait; the next look reads the notifications.
  if (!listen_armed) {
    listen_armed = true;
    listen_socket->async_wait(asio::posix::stream_descriptor::wait_read,
                              asio::bind_executor(*executor, [this](const boost::system::error_code& error) {
                                listen_armed = false;
                                if (!error && wake) wake->cancel();
                              }));
  }
  return notified;
}

void Relay::Async::listener_connected(Relay& relay, std::exception_ptr failure) {
  listen_connecting = false;
  try {
    if (failure) std::rethrow_exception(failure);
    listener = std::move(connecting);
    // A duplicate: the descriptor closes its own, libpq its socket.
    const int socket = ::dup(listener->sock());
    if (socket < 0) throw std::system_error(errno, std::generic_category(), "dup of the connection's socket");
    listen_socket.emplace(*executor, socket);
    listen_fresh = true;
    listen_delay->succeeded();
    spdlog::debug("the outbox relay listens on {}", kOutboxChannel);
  } catch (const std::exception& error) {
    connecting.reset();
    drop_listener(relay, error.what());
  }
  if (wake) wake->cancel();
}

void Relay::Async::drop_listener(Relay& relay, const std::string& why) {
  listen_socket.reset();  // cancels its wait
  listener.reset();
  if (why.empty()) return;
  std::string reason = redact_urls(why);
  while (!reason.empty() && std::isspace(static_cast<unsigned char>(reason.back())) != 0) reason.pop_back();
  const Duration delay = listen_delay->failed();
  spdlog::warn("the outbox relay's LISTEN connection failed: {}; it polls every {} ms and connects it again in {} ms",
               reason, relay.options_.poll_interval.count(), delay.count());
  listen_next = std::chrono::steady_clock::now() + delay;
}

asio::awaitable<void> Relay::Async::loop(Relay* relay) {
  Relay& self = *relay;
  Async& async = *self.async_;
  const std::size_t window = self.options_.config.max_in_flight;
  // Taken from the sinks, not yet handed to a statement (the slots were busy).
  std::vector<Answer> answered;
  std::exception_ptr failure;  // of a statement: the loop ends once the others have ended too
  // Due rows of a destination may be waiting while wanted > its lane's covered. Each reason
  // to look again (the start, answers recorded, a claim that got all it asked for, the
  // poll, a notification) takes the next tick of `clock` into `wanted`; a claim that found
  // fewer of a destination than it asked for covers that destination's ticks before its
  // start, which its snapshot includes. A statement whose snapshot predates another's marks
  // cannot see their successors, so it covers no later tick.
  std::uint64_t clock = 1;
  std::uint64_t wanted = 1;
  const auto all_covered = [&] {
    return std::all_of(async.lanes.begin(), async.lanes.end(),
                       [&](const auto& lane) { return wanted <= lane.second.covered; });
  };
  bool expired = false;
  auto next_refresh = std::chrono::steady_clock::now();
  // The end of the current rate period (each lane counts its answers), and the queue the
  // last one allows.
  auto period_end = next_refresh + kRatePeriod;
  const double periods_per_quarter_lease = std::chrono::duration<double>(self.options_.lease / 4) / kRatePeriod;
  std::size_t queue_limit = window;
  for (auto& [name, lane] : async.lanes) {
    lane.queued.clear();  // a failed loop's: their leases run out
    lane.queue_limit = lane.window;
    lane.answers_in_period = 0;
    lane.covered = 0;
  }
  async.in_flight.clear();  // a failed loop's: their leases run out
  async.listen_next = {};
  async.listen_delay.emplace(self.options_.listen_retry, kMaxListenRetry);
  for (;;) {
    bool stopping = false;
    {
      std::lock_guard lock(self.mutex_);
      for (auto& answer : self.answers_) {
        Lane& lane = async.lanes.at(answer.destination);
        --lane.sending;
        ++lane.answers_in_period;
        async.in_flight.erase(answer.id);
        answered.push_back(std::move(answer));
      }
      self.answers_.clear();
      stopping = self.stop_requested_;
    }

    // What the statements that ended recorded and claimed.
    bool running = false;
    std::size_t requested = 0;  // what the statements still running may claim
    for (Task& task : async.tasks) {
      if (task.finished) {
        task.finished = false;
        task.running = false;
        for (const std::int64_t id : task.renew_ids) {
          const auto it = async.in_flight.find(id);
          if (it == async.in_flight.end()) continue;  // answered meanwhile
          it->second.renewing = false;
          if (task.failure) continue;  // renewed again by the next statement
          if (std::find(task.renewed.begin(), task.renewed.end(), id) != task.renewed.end()) {
            it->second.leased = task.started;
          } else {
            // Fenced out: an operator re-drove the event, or the lease ran out before the
            // renewal and another claim took it. Nothing can call back what was sent.
            spdlog::warn("outbox event {}: the lease of attempt {} in flight was lost before it was renewed; "
                         "the event may be sent again beside it",
                         id, it->second.attempt);
            async.in_flight.erase(it);
          }
        }
        if (task.failure) {
          // Unrecorded, these answers' leases run out and the events go again (at least once).
          if (!failure) failure = task.failure;
          task.failure = nullptr;
          continue;
        }
        self.account(task.answers);
        if (task.count) self.publish_pending(task.pending);
        // More may be due where it got all it asked for, and the successors of what it
        // recorded where it did not look (a claim sees those it made due itself).
        // Where the limit across them bound, no destination is known to have no more.
        const bool bound = task.capacity > 0 && task.claimed.size() >= task.capacity;
        bool more = bound;
        for (const auto& [name, capacity] : task.capacities) {
          const auto claimed = std::count_if(task.claimed.begin(), task.claimed.end(),
                                             [&name](const OutboxEvent& event) { return event.destination == name; });
          if (!bound && static_cast<std::size_t>(claimed) < capacity) {
            Lane& lane = async.lanes.at(name);
            lane.covered = std::max(lane.covered, task.view);
          } else {
            more = true;
          }
        }
        more = more || std::any_of(task.answers.begin(), task.answers.end(),
                                   [&task](const Answer& answer) { return !task.capacities.contains(answer.destination); });
        if (more) wanted = ++clock;
        for (auto& event : task.claimed) {
          const std::string destination = event.destination;
          async.lanes.at(destination).queued.push_back({std::move(event), task.started});
        }
        task.claimed.clear();
      } else if (task.running) {
        running = true;
        requested += task.capacity;
      }
    }
    if (!failure) async.send_queued(self);

    // Statements on the idle slots: the answers in hand, and claims while fewer than the
    // window plus the queue the answer rate allows are claimed and not yet answered.
    const auto now = std::chrono::steady_clock::now();
    if (now >= period_end) {
      const auto queue_for = [&](std::size_t answers, std::size_t window) {
        const auto rate_limit = static_cast<std::size_t>(static_cast<double>(answers) * periods_per_quarter_lease);
        return std::clamp(rate_limit, window, (kClaimAhead - 1) * window);
      };
      std::size_t answers_in_period = 0;
      for (const auto& [name, lane] : async.lanes) answers_in_period += lane.answers_in_period;
      queue_limit = queue_for(answers_in_period, window);
      for (auto& [name, lane] : async.lanes) {
        lane.queue_limit = queue_for(lane.answers_in_period, lane.window);
        lane.answers_in_period = 0;
      }
      period_end = now + kRatePeriod;
    }
    const std::size_t limit = window + queue_limit;
    for (Task& task : async.tasks) {
      if (failure || task.running) continue;
      std::size_t outstanding = requested;
      for (const auto& [name, lane] : async.lanes) outstanding += lane.queued.size() + lane.sending;
      // Each destination that may have due rows, up to what its own window and queue allow;
      // the limit across them (by due time, in the claim) is what the relay's allow.
      task.capacities.clear();
      if (!stopping && outstanding < limit) {
        for (const auto& [name, lane] : async.lanes) {
          const std::size_t lane_outstanding = lane.queued.size() + lane.sending + async.requested_of(name);
          const std::size_t lane_limit = lane.window + lane.queue_limit;
          if (wanted > lane.covered && lane_outstanding < lane_limit) {
            task.capacities[name] = std::min(lane_limit - lane_outstanding, limit - outstanding);
          }
        }
      }
      const bool claim = !task.capacities.empty();
      const bool count = self.metrics_ != nullptr && now >= next_refresh;
      async.take_renewals(self.options_.lease, task);
      if (answered.empty() && !claim && !count && task.renew_ids.empty()) break;
      task.answers = std::move(answered);
      answered.clear();
      self.settle(task.answers, task.delays);
      task.capacity = 0;
      for (const auto& [name, capacity] : task.capacities) task.capacity += capacity;
      task.capacity = std::min(task.capacity, claim ? limit - outstanding : 0);
      task.count = count;
      task.view = clock;
      if (count) next_refresh = now + kPendingRefreshInterval;
      requested += task.capacity;
      running = true;
      start_task(relay, &task);
    }

    // No suspension from the look at the queue to the wait: an answer, a statement's end or
    // a stop() that comes after the look cancels the wait, on this strand.
    const bool busy = running || async.sending() > 0 || !answered.empty() ||
                      std::any_of(async.lanes.begin(), async.lanes.end(),
                                  [](const auto& lane) { return !lane.second.queued.empty(); });
    if (!self.once_ && !failure && async.listen(self, stopping)) {
      wanted = ++clock;
      continue;
    }
    {
      std::lock_guard lock(self.mutex_);
      if (!self.answers_.empty()) continue;
      if (async.listen_connecting) {
        // its completion touches this loop's state: wait for it
      } else if (failure && !running) {
        break;
      } else if (!busy && (self.stop_requested_ || (self.once_ && all_covered()))) {
        break;
      }
    }
    Duration how_long = self.options_.poll_interval;
    const auto renewal = async.next_renewal(self.options_.lease);
    if (renewal != std::chrono::steady_clock::time_point::max() && !failure &&
        std::any_of(async.tasks.begin(), async.tasks.end(), [](const Task& task) { return !task.running; })) {
      // Awake when a lease in flight is due for renewal (while both slots are busy, the end
      // of a statement wakes the loop).
      const auto until_renewal = std::chrono::duration_cast<Duration>(renewal - std::chrono::steady_clock::now());
      how_long = std::clamp(until_renewal, Duration::zero(), how_long);
    }
    if (!self.once_ && !async.listener && !async.listen_connecting) {
      // Awake when the LISTEN connection is due to be made again.
      const auto until_listen = std::chrono::duration_cast<Duration>(async.listen_next - std::chrono::steady_clock::now());
      how_long = std::clamp(until_listen, Duration::zero(), how_long);
    }
    co_await Async::wait(&*async.wake, how_long, &expired);
    if (expired) wanted = ++clock;
  }
  async.drop_listener(self, "");
  if (failure) std::rethrow_exception(failure);
  if (self.metrics_ != nullptr) {
    Task& task = async.tasks.front();
    co_await with_database(relay, "count pending outbox events", &task.count_pending, &*task.outage);
    self.publish_pending(task.pending);
  }
}

asio::awaitable<void> Relay::Async::with_database(Relay* relay, const char* what,
                                                  const std::function<void(pqxx::connection&)>* work,
                                                  asio::steady_timer* outage) {
  Relay& self = *relay;
  const std::function<void()> attempt = [&self, what, work] { self.database_.with_connection(what, *work); };
  for (;;) {
    try {
      co_await async::offload(&self.async_->database_threads, &attempt);
      if (self.waiting_for_database_.exchange(false)) spdlog::info("the outbox relay reaches the database again");
      co_return;
    } catch (const db::RetriesExhausted& error) {
      // A long outage is the world failing, not the relay: a serving relay waits it out, with
      // the answers in hand kept for when it ends. drain() (relay --once) reports it instead.
      if (self.once_ || self.stop_requested()) throw;
      self.waiting_for_database_ = true;
      spdlog::error("{}; the outbox relay keeps waiting for the database", error.what());
    }
    // Cancelled by stop(), which then ends the wait for the database with the next failure.
    bool expired = false;
    co_await Async::wait(outage, self.options_.database_retries.max_delay, &expired);
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
  Answer answer;
  answer.id = event.id;
  answer.destination = event.destination;
  answer.idempotency_key = event.idempotency_key;
  answer.attempt = event.attempt;
  const auto started = std::chrono::steady_clock::now();
  sinks_.at(event.destination)
      ->deliver(std::move(event), [this, answer = std::move(answer), started](DeliveryResult result) mutable {
        answer.result = std::move(result);
        answer.elapsed = std::chrono::steady_clock::now() - started;
        answered(std::move(answer));
      });
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
