#include "connectors/nats_sink/nats_sink.hpp"

#include <nats/nats.h>

#include <algorithm>
#include <exception>

#include <boost/asio/thread_pool.hpp>

#include "connectors/http/webhook_sink.hpp"
#include "connectors/nats_sink/subject.hpp"
#include "pipeline/async/offload.hpp"

namespace tidemark::connectors::nats_sink {

using pipeline::DeliveryResult;
using pipeline::OutboxEvent;

namespace {

std::string duration_text(std::chrono::nanoseconds duration) {
  if (duration.count() == 0) return "0 (none)";
  return pipeline::format_duration(std::chrono::duration_cast<pipeline::Duration>(duration));
}

}  // namespace

std::string duplicate_window_problem(std::string_view stream, std::chrono::nanoseconds window,
                                     pipeline::Duration horizon) {
  if (window > horizon) return "";
  return "JetStream stream " + std::string(stream) + " has a duplicate window of " + duration_text(window) +
         ", not longer than the relay's redelivery horizon of " + pipeline::format_duration(horizon) +
         " (every retry delay at relay.max_delay plus one lease per attempt, over relay.max_attempts): a "
         "redelivered event could be stored twice. Give the stream a duplicate window longer than " +
         pipeline::format_duration(horizon) + " (tidemark nats setup creates it with twice the horizon), or "
         "shorten the relay's schedule";
}

std::chrono::nanoseconds setup_duplicate_window(pipeline::Duration horizon, std::chrono::nanoseconds max_age) {
  const std::chrono::nanoseconds window = 2 * std::chrono::duration_cast<std::chrono::nanoseconds>(horizon);
  return max_age.count() > 0 ? std::min(window, max_age) : window;
}

DeliveryResult classify_publish(int status, int api_error, std::string_view text) {
  std::string error(text);
  // nats.c pairs "no responders" with the code of "JetStream not enabled"; the subject is the cause.
  if (status == NATS_NO_RESPONDERS) {
    return DeliveryResult::retry(std::move(error) +
                                 " (no JetStream stream captures this subject: check the stream's subjects)");
  }
  if (api_error != 0) error += " (JetStream error " + std::to_string(api_error) + ")";
  switch (api_error) {
    case JSStreamMessageExceedsMaximumErr:
    case JSStreamSealedErr:
    case JSStreamNotMatchErr:
      return DeliveryResult::dead(std::move(error));
    default:
      break;
  }
  switch (static_cast<natsStatus>(status)) {
    case NATS_MAX_PAYLOAD:
    case NATS_NOT_PERMITTED:
      return DeliveryResult::dead(std::move(error));
    default:
      return DeliveryResult::retry(std::move(error));
  }
}

StreamSetup setup_stream(const ConnectionOptions& connection_options, const std::string& stream,
                         const std::string& subject, pipeline::Duration redelivery_horizon,
                         std::chrono::nanoseconds max_age) {
  nats::Connection connection(connection_options);
  const std::string captured = subject + ".>";
  const std::chrono::nanoseconds window = setup_duplicate_window(redelivery_horizon, max_age);
  StreamSetup setup;
  if (const auto info = connection.stream_info(stream)) {
    setup.duplicate_window = std::chrono::nanoseconds(info->duplicate_window_ns);
    if (std::find(info->subjects.begin(), info->subjects.end(), captured) == info->subjects.end()) {
      setup.differences.push_back("its subjects do not include " + captured);
    }
    if (setup.duplicate_window != window) {
      setup.differences.push_back("duplicate window " + duration_text(setup.duplicate_window) + ", setup would set " +
                                  duration_text(window));
    }
    if (const auto problem = duplicate_window_problem(stream, setup.duplicate_window, redelivery_horizon);
        !problem.empty()) {
      setup.differences.push_back(problem);
    }
    if (std::chrono::nanoseconds(info->max_age_ns) != max_age) {
      setup.differences.push_back("max_age " + duration_text(std::chrono::nanoseconds(info->max_age_ns)) +
                                  ", setup would set " + duration_text(max_age));
    }
    if (!info->file_storage) setup.differences.push_back("memory storage, setup would use file storage");
    if (!info->limits_retention) setup.differences.push_back("not limits retention, setup would use limits retention");
    return setup;
  }
  nats::StreamSpec spec;
  spec.name = stream;
  spec.subjects = captured;
  spec.deny_delete = false;
  spec.deny_purge = false;
  spec.duplicate_window_ns = window.count();
  spec.max_age_ns = max_age.count();
  setup.duplicate_window = std::chrono::nanoseconds(connection.add_stream(spec).duplicate_window_ns);
  setup.created = true;
  return setup;
}

// Publishes on a pool of max_in_flight threads: each publish waits for its PubAck (bounded by
// ack_timeout), so a slow stream holds a thread, never the relay's io_context. The connection is
// shared: nats.c's publish is thread-safe.
class NatsSink::Publisher {
 public:
  explicit Publisher(NatsSinkOptions options)
      : options_(std::move(options)),
        connection_(publishing(options_)),
        pool_(std::max<std::size_t>(1, options_.max_in_flight)) {
    const auto info = connection_.stream_info(options_.stream);
    if (!info) {
      throw StreamRefused("JetStream stream " + options_.stream + " does not exist on " + connection_.servers() +
                          "; create it (tidemark nats setup, docs/delivery.md \"NATS JetStream destinations\") "
                          "with subjects " + options_.subject + ".>");
    }
    if (auto problem = duplicate_window_problem(options_.stream, std::chrono::nanoseconds(info->duplicate_window_ns),
                                                options_.redelivery_horizon);
        !problem.empty()) {
      throw StreamRefused(problem);
    }
  }

  ~Publisher() { pool_.join(); }  // the publishes in flight end within ack_timeout

  // nats.c's publish blocks until the PubAck: it runs on the pool, never on the caller's
  // io_context, which resumes with the answer.
  boost::asio::awaitable<DeliveryResult> deliver(OutboxEvent event) {
    DeliveryResult result;
    const std::function<void()> publishing = [this, &event, &result] {
      try {
        result = publish(event);
      } catch (const std::exception& error) {
        result = DeliveryResult::retry(std::string("internal error: ") + error.what());
      }
    };
    co_await pipeline::async::offload(&pool_, &publishing);
    co_return result;
  }

 private:
  // The sink's connection: reconnecting for ever, each PubAck awaited up to ack_timeout.
  static ConnectionOptions publishing(const NatsSinkOptions& options) {
    ConnectionOptions connection = options.connection;
    connection.request_timeout = options.ack_timeout;
    connection.reconnect = true;
    return connection;
  }

  DeliveryResult publish(const OutboxEvent& event) {
    const std::string subject = subject_for(options_.subject, event.partition_key);
    // The webhook headers' encoding: one key reads the same in every destination's dedup.
    const nats::Published published =
        connection_.publish(subject, event.payload, http::header_id(event.idempotency_key), options_.stream);
    if (published.stored) {
      if (published.duplicate && options_.on_duplicate) options_.on_duplicate();
      return DeliveryResult::delivered();
    }
    std::string text = "publish to " + subject + " (stream " + options_.stream + "): " + published.error;
    if (published.status == NATS_TIMEOUT) {
      text += " (no PubAck within " + std::to_string(options_.ack_timeout.count()) + " ms)";
    }
    return classify_publish(published.status, published.api_error, text);
  }

  NatsSinkOptions options_;
  nats::Connection connection_;
  // Declared last: joined before the connection it publishes on goes.
  boost::asio::thread_pool pool_;
};

NatsSink::NatsSink(NatsSinkOptions options) : publisher_(std::make_unique<Publisher>(std::move(options))) {}

NatsSink::~NatsSink() = default;

boost::asio::awaitable<DeliveryResult> NatsSink::deliver(OutboxEvent event) { return publisher_->deliver(std::move(event)); }

}  // namespace tidemark::connectors::nats_sink
