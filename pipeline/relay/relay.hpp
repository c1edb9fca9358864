#pragma once
// The outbox relay (docs/rules.md rules 6, 9, 11, 12): claims due outbox rows in short
// transactions, hands them to the destination's Sink, and records the answer — delivered,
// retry later with capped, jittered backoff, or dead. Several relays may run at once.
// The loop is a coroutine on an io_context (relay.cpp); its libpqxx work runs on threads of
// the relay's own. This header includes no Asio beyond the Sink port's awaitable: the CLI and
// the tests include it.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <pqxx/pqxx>

#include "pipeline/core/log_throttle.hpp"
#include "pipeline/core/sink.hpp"
#include "pipeline/store/pg/database.hpp"

namespace boost::asio {
class io_context;
}

namespace tidemark::metrics {
struct Metrics;
}

namespace tidemark::pipeline::relay {

// The config's `relay:` settings, as the relay works by them (app/wiring fills them in).
struct DeliveryPolicy {
  int max_attempts = 10;  // a retryable failure on the last one is final (dead)
  Duration base_delay = std::chrono::seconds(1);  // retry backoff, docs/rules.md rule 9
  Duration max_delay = std::chrono::minutes(5);
  std::size_t max_in_flight = 16;  // deliveries in flight at once, across keys and destinations
  // The longest one attempt of a sink may take (its timeouts): the lease outlasts them.
  Duration connect_timeout = std::chrono::seconds(5);
  Duration request_timeout = std::chrono::seconds(10);
};

struct RelayOptions {
  DeliveryPolicy config;
  // Destinations with a window of their own (their max_in_flight, at most config's): no more
  // of their deliveries are in flight at once, so that a slow one cannot hold every place.
  // The others may use the whole window.
  std::map<std::string, std::size_t> windows;
  // How long a claimed event stays invisible to every relay. The relay renews the leases of
  // its attempts in flight every third of a lease, so an attempt may outlast it; a relay
  // killed mid-attempt stops renewing, and its events are due again when their leases expire.
  Duration lease = std::chrono::seconds(30);
  Duration poll_interval = std::chrono::milliseconds(500);  // when idle, how often to look again
  // run() also LISTENs on the channel a commit that wrote outbox rows NOTIFYs, so such a
  // commit ends an idle wait at once; polling stays the fallback. A LISTEN connection that
  // fails is connected again after this long, doubling up to 30 s.
  Duration listen_retry = std::chrono::seconds(1);
  std::uint64_t seed = std::random_device{}();              // backoff jitter
  // One round of database retries. drain() gives up after one round (RetriesExhausted);
  // run() waits an outage out for ever, round after round, until it ends or stop() is called.
  db::RetryPolicy database_retries;
};

struct RelayStats {
  std::uint64_t delivered = 0;
  std::uint64_t retried = 0;
  std::uint64_t dead = 0;
};

class Relay {
 public:
  // Delivers the outbox rows of the destinations in `sinks`; rows of other destinations are
  // left to whoever consumes them. `metrics` may be null.
  Relay(std::string database_url, Sinks sinks, RelayOptions options, metrics::Metrics* metrics = nullptr);
  ~Relay();
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // `relay --once`: delivers what is due, waits for the answers, and returns when nothing
  // is due and nothing is in flight. Retries scheduled for later stay pending. Runs the loop
  // on an io_context of its own, on the calling thread.
  RelayStats drain();
  // Delivers until stop() is called, looking for due rows every poll_interval when idle.
  // Runs the loop on an io_context of its own, on the calling thread.
  RelayStats run();
  // run() on `io` (serve's): the loop runs there as a coroutine and returns at once;
  // `ended` is called on `io` when the loop has ended, with its error (null after stop()).
  // `io` must outlive the loop; one loop at a time per Relay.
  void start(boost::asio::io_context& io, std::function<void(std::exception_ptr)> ended);
  // Thread-safe, by cancellation: the loop's waits are cancelled on its io_context, it stops
  // claiming, waits for the answers in flight, records them and ends. A loop started later
  // ends at once.
  void stop();
  // Thread-safe: run() has spent a whole round of database retries and is still waiting for
  // the database (readiness reports it); false again once a statement succeeds.
  bool waiting_for_database() const { return waiting_for_database_; }

 private:
  struct Answer {
    std::int64_t id = 0;
    std::string destination;
    std::string idempotency_key;
    int attempt = 0;
    DeliveryResult result;
    std::chrono::steady_clock::duration elapsed{};
  };

  // The loop's coroutines and state: its Asio objects, statement slots, lanes and LISTEN waker (relay.cpp).
  struct LoopState;

  RelayStats run_here(bool once);
  void begin(boost::asio::io_context& io, bool once, std::function<void(std::exception_ptr)> ended);
  // Settles the answers' final status (out of attempts = dead) and retry delays.
  void settle(std::vector<Answer>& answers, std::vector<long long>& delays);
  // Records the answers, then claims due events into `claimed`: up to `capacities` of each
  // destination named there, `capacity` in all; each statement commits. On a database thread.
  void record_and_claim(pqxx::connection& connection, const std::vector<Answer>& answers,
                        const std::vector<long long>& delays, const std::map<std::string, std::size_t>& capacities,
                        std::size_t capacity, std::vector<OutboxEvent>& claimed);
  // After the commit: counts, logs and metrics of the recorded answers.
  void account(const std::vector<Answer>& answers);
  // Delivers `event` through its sink on the loop's strand; the answer comes back through answered().
  void send(OutboxEvent event);
  // The pending events per destination into `pending`. On a database thread.
  void count_pending(pqxx::connection& connection, std::map<std::string, double>& pending);
  void publish_pending(const std::map<std::string, double>& pending);
  // Called by the deliveries, on the strand of the loop that sent them (a loop that failed
  // may have gone since): queues the answer and wakes the loop running now.
  void answered(Answer answer);
  bool stop_requested();
  Duration retry_delay(const Answer& answer);

  RelayOptions options_;
  metrics::Metrics* metrics_;
  db::Database database_;  // used by the relay's database threads only (relay.cpp), two at once
  std::mt19937_64 rng_;
  RelayStats stats_;
  bool once_ = false;          // the loop running is drain()'s
  std::atomic<bool> waiting_for_database_{false};
  // An outage's "keeps waiting" line: once, then one a minute with the count.
  LogThrottle outage_log_{std::chrono::minutes(1)};

  std::mutex mutex_;
  std::deque<Answer> answers_;  // guarded by mutex_: filled by the deliveries
  bool stop_requested_ = false;  // guarded by mutex_

  // After database_: its thread is joined before the pool it uses goes.
  std::unique_ptr<LoopState> state_;
  // Last, so the sinks (and their I/O threads) stop before the queue they answer into goes.
  Sinks sinks_;
};

}  // namespace tidemark::pipeline::relay
