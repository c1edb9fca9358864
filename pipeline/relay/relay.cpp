#include "pipeline/relay/relay.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include <boost/asio/co_spawn.hpp>
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
#include "pipeline/store/pg/pg_text.hpp"
#include "pipeline/core/failpoint.hpp"
#include "pipeline/core/utf8.hpp"
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

// The sinks' names as a PostgreSQL array literal.
std::string text_array(const Sinks& sinks) {
  std::vector<std::string> names;
  for (const auto& [name, sink] : sinks) names.push_back(name);
  return db::text_array_literal(names);
}

void prepare(pqxx::connection& connection) {
  connection.prepare("relay_claim", std::string(sql::kRelayClaim));
  connection.prepare("relay_mark_failed", std::string(sql::kRelayMarkFailed));
}

}  // namespace

std::string bounded_error_text(std::string_view text, std::size_t max_bytes) {
  bool changed = false;
  std::string stored = storable_text(text, changed);
  if (stored.size() <= max_bytes) return stored;
  static constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // U+2026
  // Valid UTF-8 now, so the cut can back up to a character's start.
  stored.resize(utf8_prefix_length(stored, max_bytes > kEllipsis.size() ? max_bytes - kEllipsis.size() : 0));
  return stored + std::string(kEllipsis);
}

namespace {

bool is_scheme_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '-' || c == '.';
}

// One URL: "***" for its userinfo and its query.
std::string redact_url(std::string_view url, std::size_t authority_start) {
  std::string redacted(url.substr(0, authority_start));
  std::string_view rest = url.substr(authority_start);
  const std::size_t authority_end = std::min(rest.find_first_of("/?#"), rest.size());
  if (const std::size_t at = rest.substr(0, authority_end).rfind('@'); at != std::string_view::npos) {
    redacted += "***";
    rest.remove_prefix(at);
  }
  if (const std::size_t query = rest.find('?'); query != std::string_view::npos) {
    const std::size_t fragment = std::min(rest.find('#', query), rest.size());
    redacted.append(rest.substr(0, query + 1)).append("***").append(rest.substr(fragment));
  } else {
    redacted += rest;
  }
  return redacted;
}

}  // namespace

std::string redact_urls(std::string_view text) {
  std::string redacted;
  std::size_t done = 0;  // text[0, done) is in `redacted`
  for (std::size_t mark = text.find("://"); mark != std::string_view::npos; mark = text.find("://", mark + 3)) {
    std::size_t start = mark;
    while (start > done && is_scheme_char(text[start - 1])) --start;
    if (start == mark) continue;
    std::size_t end = mark + 3;
    while (end < text.size() && std::isspace(static_cast<unsigned char>(text[end])) == 0 &&
           std::string_view("\"'<>").find(text[end]) == std::string_view::npos) {
      ++end;
    }
    // Punctuation that ends a sentence or a clause is not part of the URL ("… to http://h/p: refused").
    while (end > mark + 3 && std::string_view(".,:;)]").find(text[end - 1]) != std::string_view::npos) --end;
    redacted.append(text.substr(done, start - done));
    redacted += redact_url(text.substr(start, end - start), mark + 3 - start);
    done = end;
    mark = end > mark + 3 ? end - 3 : mark;
  }
  redacted.append(text.substr(done));
  return redacted;
}

// The loop's Asio state. The loop runs on a strand of the io_context it was started on; the
// libpqxx work runs on `database_thread`, the only thread that touches the connection pool.
struct Relay::Async {
  using Strand = asio::strand<asio::io_context::executor_type>;

  static asio::awaitable<void> loop(Relay* relay);
  // Runs `*work` on the relay's pooled connection with database retries; for ever in run()
  // (see RelayOptions::database_retries), throws when stopping or in drain().
  static asio::awaitable<void> with_database(Relay* relay, const char* what,
                                             const std::function<void(pqxx::connection&)>* work);
  // Waits `how_long` on `timer`, or until the wait is cancelled (an answer or stop()).
  static asio::awaitable<void> wait(asio::steady_timer* timer, Duration how_long);

  asio::thread_pool database_thread{1};
  std::optional<Strand> executor;           // guarded by the relay's mutex_: the running loop's
  std::optional<asio::steady_timer> wake;   // on the strand: the wait for an answer or the idle poll
  std::optional<asio::steady_timer> outage;  // on the strand: the wait a database outage out
};

Relay::Relay(std::string database_url, Sinks sinks, RelayOptions options, metrics::Metrics* metrics)
    : options_(std::move(options)),
      metrics_(metrics),
      destinations_(text_array(sinks)),
      database_(std::move(database_url), options_.database_retries, prepare),
      rng_(options_.seed),
      async_(std::make_unique<Async>()),
      sinks_(std::move(sinks)) {
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
  async_->outage.emplace(strand);
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
    async_->outage.reset();
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
      if (async->outage) async->outage->cancel();
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

asio::awaitable<void> Relay::Async::wait(asio::steady_timer* timer, Duration how_long) {
  timer->expires_after(how_long);
  boost::system::error_code cancelled;
  co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, cancelled));
}

asio::awaitable<void> Relay::Async::loop(Relay* relay) {
  Relay& self = *relay;
  // The loop's state, in named locals that the database work (on the database thread, while
  // the loop awaits it) reads and fills.
  std::vector<Answer> answers;
  std::vector<long long> delays;
  std::size_t capacity = 0;
  std::vector<OutboxEvent> claimed;
  std::map<std::string, double> pending;
  const std::function<void(pqxx::connection&)> record_and_claim = [&](pqxx::connection& connection) {
    self.record_and_claim(connection, answers, delays, capacity, claimed);
  };
  const std::function<void(pqxx::connection&)> count_pending = [&](pqxx::connection& connection) {
    self.count_pending(connection, pending);
  };
  auto next_refresh = std::chrono::steady_clock::now();
  for (;;) {
    bool stopping = false;
    {
      std::lock_guard lock(self.mutex_);
      answers.assign(std::make_move_iterator(self.answers_.begin()), std::make_move_iterator(self.answers_.end()));
      self.answers_.clear();
      stopping = self.stop_requested_;
    }
    self.settle(answers, delays);
    capacity = stopping || self.sinks_.empty() ? 0 : self.options_.config.max_in_flight - (self.in_flight_ - answers.size());
    claimed.clear();
    if (!answers.empty() || capacity > 0) {
      try {
        co_await with_database(relay, "record delivery results and claim due outbox events", &record_and_claim);
      } catch (...) {
        // Unrecorded, these answers' leases run out and the events go again (at least once).
        // They are no longer in flight, so a loop started again counts its capacity right.
        self.in_flight_ -= answers.size();
        throw;
      }
    }
    self.account(answers);
    const bool claimed_any = !claimed.empty();
    self.send(std::move(claimed));

    if (self.metrics_ != nullptr && std::chrono::steady_clock::now() >= next_refresh) {
      co_await with_database(relay, "count pending outbox events", &count_pending);
      self.publish_pending(pending);
      next_refresh = std::chrono::steady_clock::now() + kPendingRefreshInterval;
    }

    // No suspension from the look at the queue to the wait: an answer or a stop() that comes
    // after the look cancels the wait, on this strand.
    bool wait = false;
    {
      std::lock_guard lock(self.mutex_);
      if (self.in_flight_ > 0) {
        // Wake for the first answer; the timeout lets newly due rows in while slow ones run.
        wait = self.answers_.empty();
      } else if (!claimed_any && self.answers_.empty()) {
        if (self.once_ || self.stop_requested_) break;
        wait = true;
      }
    }
    if (wait) co_await Async::wait(&*self.async_->wake, self.options_.poll_interval);
  }
  if (self.metrics_ != nullptr) {
    co_await with_database(relay, "count pending outbox events", &count_pending);
    self.publish_pending(pending);
  }
}

asio::awaitable<void> Relay::Async::with_database(Relay* relay, const char* what,
                                                  const std::function<void(pqxx::connection&)>* work) {
  Relay& self = *relay;
  const std::function<void()> attempt = [&self, what, work] { self.database_.with_connection(what, *work); };
  for (;;) {
    try {
      co_await async::offload(&self.async_->database_thread, &attempt);
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
    co_await Async::wait(&*self.async_->outage, self.options_.database_retries.max_delay);
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
                             const std::vector<long long>& delays, std::size_t capacity,
                             std::vector<OutboxEvent>& claimed) {
  std::vector<std::int64_t> delivered;
  for (const auto& answer : answers) {
    if (answer.result.status == DeliveryResult::Status::kDelivered) delivered.push_back(answer.id);
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
    const auto rows = txn.exec_prepared("relay_claim", destinations_, static_cast<long long>(capacity),
                                        static_cast<long long>(options_.lease.count()), delivered_ids);
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

void Relay::send(std::vector<OutboxEvent> events) {
  for (auto& event : events) {
    Answer answer;
    answer.id = event.id;
    answer.destination = event.destination;
    answer.idempotency_key = event.idempotency_key;
    answer.attempt = event.attempt;
    const auto started = std::chrono::steady_clock::now();
    ++in_flight_;
    sinks_.at(event.destination)
        ->deliver(std::move(event), [this, answer = std::move(answer), started](DeliveryResult result) mutable {
          answer.result = std::move(result);
          answer.elapsed = std::chrono::steady_clock::now() - started;
          answered(std::move(answer));
        });
  }
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
    --in_flight_;
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
