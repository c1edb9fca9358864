#include "connectors/nats_sink/nats_sink.hpp"

#include <nats/nats.h>

#include <algorithm>
#include <climits>
#include <exception>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "connectors/http/webhook_sink.hpp"
#include "connectors/nats_sink/subject.hpp"

namespace tidemark::connectors::nats_sink {

using pipeline::relay::DeliveryResult;
using pipeline::relay::OutboxEvent;

namespace {

// The status's text, with the client's own message for it when this thread's last error is
// that failure (an older failure's message is not repeated).
std::string error_text(natsStatus status) {
  natsStatus last = NATS_OK;
  const char* detail = nats_GetLastError(&last);
  std::string text = natsStatus_GetText(status);
  if (last == status && detail != nullptr && *detail != '\0' && text != detail) text += ": " + std::string(detail);
  return text;
}

std::string servers_text(const ConnectionOptions& options) {
  std::string text;
  for (const auto& server : options.servers) text += (text.empty() ? "" : ", ") + server;
  return text;
}

std::string duration_text(std::chrono::nanoseconds duration) {
  if (duration.count() == 0) return "0 (none)";
  return pipeline::format_duration(std::chrono::duration_cast<pipeline::Duration>(duration));
}

// One connection and its JetStream context; `api_wait` bounds each JetStream API request.
class Connection {
 public:
  Connection(const ConnectionOptions& options, std::chrono::milliseconds api_wait) {
    natsOptions* settings = nullptr;
    natsStatus status = natsOptions_Create(&settings);
    std::vector<const char*> servers;
    for (const auto& server : options.servers) servers.push_back(server.c_str());
    if (status == NATS_OK) status = natsOptions_SetServers(settings, servers.data(), static_cast<int>(servers.size()));
    if (status == NATS_OK) status = natsOptions_SetTimeout(settings, options.connect_timeout.count());
    if (status == NATS_OK) status = natsOptions_SetName(settings, "tidemark");
    // A server that goes away is reconnected to for ever: meanwhile publishes fail or time
    // out (retried by the relay), never the connection for good.
    if (status == NATS_OK) status = natsOptions_SetMaxReconnect(settings, -1);
    // A publish waiting for its PubAck when the connection drops fails at once instead of
    // waiting its whole timeout.
    if (status == NATS_OK) status = natsOptions_SetFailRequestsOnDisconnect(settings, true);
    if (status == NATS_OK && !options.credentials_file.empty()) {
      status = natsOptions_SetUserCredentialsFromFiles(settings, options.credentials_file.c_str(), nullptr);
    }
    if (status == NATS_OK) status = natsConnection_Connect(&connection_, settings);
    natsOptions_Destroy(settings);
    if (status != NATS_OK) {
      throw NatsError("cannot connect to NATS (" + servers_text(options) + "): " + error_text(status));
    }
    jsOptions js_options;
    jsOptions_Init(&js_options);
    js_options.Wait = api_wait.count();
    status = natsConnection_JetStream(&js_, connection_, &js_options);
    if (status != NATS_OK) {
      natsConnection_Destroy(connection_);
      throw NatsError("cannot use JetStream on " + servers_text(options) + ": " + error_text(status));
    }
  }

  ~Connection() {
    jsCtx_Destroy(js_);
    natsConnection_Destroy(connection_);
  }

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  jsCtx* js() const { return js_; }

  // The stream's info, or nullptr when there is no such stream.
  std::unique_ptr<jsStreamInfo, void (*)(jsStreamInfo*)> stream_info(const std::string& stream) const {
    jsStreamInfo* info = nullptr;
    jsErrCode api_error = static_cast<jsErrCode>(0);
    const natsStatus status = js_GetStreamInfo(&info, js_, stream.c_str(), nullptr, &api_error);
    if (status == NATS_NOT_FOUND || api_error == JSStreamNotFoundErr) return {nullptr, jsStreamInfo_Destroy};
    if (status != NATS_OK) throw NatsError("cannot read JetStream stream " + stream + ": " + error_text(status));
    return {info, jsStreamInfo_Destroy};
  }

 private:
  natsConnection* connection_ = nullptr;
  jsCtx* js_ = nullptr;
};

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
  const Connection connection(connection_options, connection_options.connect_timeout);
  const std::string captured = subject + ".>";
  const std::chrono::nanoseconds window = setup_duplicate_window(redelivery_horizon, max_age);
  StreamSetup setup;
  if (const auto info = connection.stream_info(stream)) {
    const jsStreamConfig& config = *info->Config;
    setup.duplicate_window = std::chrono::nanoseconds(config.Duplicates);
    const bool captures = std::any_of(config.Subjects, config.Subjects + config.SubjectsLen,
                                      [&](const char* listed) { return captured == listed; });
    if (!captures) setup.differences.push_back("its subjects do not include " + captured);
    if (setup.duplicate_window != window) {
      setup.differences.push_back("duplicate window " + duration_text(setup.duplicate_window) + ", setup would set " +
                                  duration_text(window));
    }
    if (const auto problem = duplicate_window_problem(stream, setup.duplicate_window, redelivery_horizon);
        !problem.empty()) {
      setup.differences.push_back(problem);
    }
    if (std::chrono::nanoseconds(config.MaxAge) != max_age) {
      setup.differences.push_back("max_age " + duration_text(std::chrono::nanoseconds(config.MaxAge)) +
                                  ", setup would set " + duration_text(max_age));
    }
    if (config.Storage != js_FileStorage) setup.differences.push_back("memory storage, setup would use file storage");
    if (config.Retention != js_LimitsPolicy) {
      setup.differences.push_back("not limits retention, setup would use limits retention");
    }
    return setup;
  }
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  const char* subjects[] = {captured.c_str()};
  config.Name = stream.c_str();
  config.Subjects = subjects;
  config.SubjectsLen = 1;
  config.Storage = js_FileStorage;
  config.Retention = js_LimitsPolicy;
  config.Duplicates = window.count();
  config.MaxAge = max_age.count();
  jsStreamInfo* created = nullptr;
  jsErrCode api_error = static_cast<jsErrCode>(0);
  const natsStatus status = js_AddStream(&created, connection.js(), &config, nullptr, &api_error);
  if (status != NATS_OK) {
    throw NatsError("cannot create JetStream stream " + stream + ": " + error_text(status) +
                    (api_error != 0 ? " (JetStream error " + std::to_string(api_error) + ")" : ""));
  }
  setup.duplicate_window = std::chrono::nanoseconds(created->Config->Duplicates);
  jsStreamInfo_Destroy(created);
  setup.created = true;
  return setup;
}

// Publishes on a pool of max_in_flight threads: each publish waits for its PubAck (bounded by
// ack_timeout), so a slow stream holds a thread, never the relay's loop. The connection is
// shared: nats.c's publish is thread-safe.
class NatsSink::Publisher {
 public:
  explicit Publisher(NatsSinkOptions options)
      : options_(std::move(options)),
        connection_(options_.connection, options_.ack_timeout),
        pool_(std::max<std::size_t>(1, options_.max_in_flight)) {
    const auto info = connection_.stream_info(options_.stream);
    if (!info) {
      throw StreamRefused("JetStream stream " + options_.stream + " does not exist on " +
                          servers_text(options_.connection) + "; create it (tidemark nats setup, docs/delivery.md "
                          "\"NATS JetStream destinations\") with subjects " + options_.subject + ".>");
    }
    if (auto problem = duplicate_window_problem(options_.stream, std::chrono::nanoseconds(info->Config->Duplicates),
                                                options_.redelivery_horizon);
        !problem.empty()) {
      throw StreamRefused(problem);
    }
  }

  ~Publisher() { pool_.join(); }  // the publishes in flight end within ack_timeout

  void deliver(OutboxEvent event, Completion done) {
    boost::asio::post(pool_, [this, event = std::move(event), done = std::move(done)] {
      DeliveryResult result;
      try {
        result = publish(event);
      } catch (const std::exception& error) {
        result = DeliveryResult::retry(std::string("internal error: ") + error.what());
      }
      done(std::move(result));
    });
  }

 private:
  DeliveryResult publish(const OutboxEvent& event) {
    const std::string subject = subject_for(options_.subject, event.partition_key);
    if (event.payload.size() > static_cast<std::size_t>(INT_MAX)) {
      return DeliveryResult::dead("payload of " + std::to_string(event.payload.size()) + " bytes is too large for NATS");
    }
    natsMsg* message = nullptr;
    natsStatus status = natsMsg_Create(&message, subject.c_str(), nullptr, event.payload.data(),
                                       static_cast<int>(event.payload.size()));
    if (status != NATS_OK) return classify_publish(status, 0, "publish to " + subject + ": " + error_text(status));
    // The webhook headers' encoding: one key reads the same in every destination's dedup.
    const std::string id = http::header_id(event.idempotency_key);
    jsPubOptions publish_options;
    jsPubOptions_Init(&publish_options);
    publish_options.MsgId = id.c_str();
    publish_options.MaxWait = options_.ack_timeout.count();
    // A message another stream captured would escape this stream's dedup: refused, not stored.
    publish_options.ExpectStream = options_.stream.c_str();
    jsPubAck* ack = nullptr;
    jsErrCode api_error = static_cast<jsErrCode>(0);
    status = js_PublishMsg(&ack, connection_.js(), message, &publish_options, &api_error);
    natsMsg_Destroy(message);
    if (status == NATS_OK) {
      const bool duplicate = ack->Duplicate;
      jsPubAck_Destroy(ack);
      if (duplicate && options_.on_duplicate) options_.on_duplicate();
      return DeliveryResult::delivered();
    }
    std::string text = "publish to " + subject + " (stream " + options_.stream + "): " + error_text(status);
    if (status == NATS_TIMEOUT) text += " (no PubAck within " + std::to_string(options_.ack_timeout.count()) + " ms)";
    return classify_publish(status, api_error, text);
  }

  NatsSinkOptions options_;
  Connection connection_;
  // Declared last: joined before the connection it publishes on goes.
  boost::asio::thread_pool pool_;
};

NatsSink::NatsSink(NatsSinkOptions options) : publisher_(std::make_unique<Publisher>(std::move(options))) {}

NatsSink::~NatsSink() = default;

void NatsSink::deliver(OutboxEvent event, Completion done) { publisher_->deliver(std::move(event), std::move(done)); }

}  // namespace tidemark::connectors::nats_sink
