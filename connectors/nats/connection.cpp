#include "connectors/nats/connection.hpp"

#include <nats/nats.h>

#include <climits>
#include <vector>

namespace tidemark::connectors::nats {

namespace {

// The client's words for a failed call: its status, the detail of the thread's last error
// and the JetStream error code when the server sent one.
std::string words(natsStatus status, jsErrCode code = static_cast<jsErrCode>(0)) {
  std::string message = natsStatus_GetText(status);
  natsStatus ignored = NATS_OK;
  if (const char* detail = nats_GetLastError(&ignored); detail != nullptr && *detail != '\0') {
    message += " (" + std::string(detail) + ")";
  }
  if (code != 0) message += " [JetStream error " + std::to_string(static_cast<int>(code)) + "]";
  return message;
}

[[noreturn]] void fail(const std::string& what, natsStatus status, jsErrCode code = static_cast<jsErrCode>(0)) {
  throw NatsError(what + ": " + words(status, code));
}

void check(const std::string& what, natsStatus status, jsErrCode code = static_cast<jsErrCode>(0)) {
  if (status != NATS_OK) fail(what, status, code);
}

// Owns what a call hands over; the client's destroy functions accept null.
template <typename T, void (*Destroy)(T*)>
struct Owned {
  T* value = nullptr;
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { Destroy(value); }
};

StreamInfo to_stream_info(const jsStreamInfo& info) {
  StreamInfo out;
  out.created = info.Created;
  out.first_sequence = info.State.FirstSeq;
  out.last_sequence = info.State.LastSeq;
  out.messages = info.State.Msgs;
  if (info.Cluster != nullptr && info.Cluster->Leader != nullptr) out.leader = info.Cluster->Leader;
  if (const jsStreamConfig* config = info.Config; config != nullptr) {
    out.name = config->Name != nullptr ? config->Name : "";
    for (int i = 0; i < config->SubjectsLen; ++i) out.subjects.emplace_back(config->Subjects[i]);
    out.file_storage = config->Storage == js_FileStorage;
    out.limits_retention = config->Retention == js_LimitsPolicy;
    out.replicas = config->Replicas;
    out.deny_delete = config->DenyDelete;
    out.deny_purge = config->DenyPurge;
    out.duplicate_window_ns = config->Duplicates;
    out.max_age_ns = config->MaxAge;
    out.max_bytes = config->MaxBytes;
  }
  return out;
}

jsOptions api_options(std::chrono::milliseconds wait) {
  jsOptions options;
  jsOptions_Init(&options);
  options.Wait = wait.count();
  return options;
}

}  // namespace

struct Connection::Handles {
  natsConnection* connection = nullptr;
  jsCtx* js = nullptr;
  ~Handles() {
    jsCtx_Destroy(js);
    natsConnection_Destroy(connection);  // closes it first
  }
};

Connection::Connection(const ConnectionOptions& settings)
    : request_timeout_(settings.request_timeout), handles_(std::make_unique<Handles>()) {
  if (settings.servers.empty()) throw NatsError("no NATS server is configured (servers)");
  for (const auto& server : settings.servers) servers_ += (servers_.empty() ? "" : ", ") + server;
  Owned<natsOptions, natsOptions_Destroy> options;
  check("nats options", natsOptions_Create(&options.value));
  std::vector<const char*> urls;
  for (const auto& server : settings.servers) urls.push_back(server.c_str());
  check("nats servers " + servers_, natsOptions_SetServers(options.value, urls.data(), static_cast<int>(urls.size())));
  check("nats options", natsOptions_SetName(options.value, "tidemark"));
  check("nats options", natsOptions_SetNoRandomize(options.value, true));
  check("nats options", natsOptions_SetTimeout(options.value, settings.connect_timeout.count()));
  if (settings.reconnect) {
    check("nats options", natsOptions_SetMaxReconnect(options.value, -1));
    check("nats options", natsOptions_SetFailRequestsOnDisconnect(options.value, true));
  } else {
    check("nats options", natsOptions_SetAllowReconnect(options.value, false));
  }
  if (!settings.credentials_file.empty()) {
    check("nats credentials " + settings.credentials_file,
          natsOptions_SetUserCredentialsFromFiles(options.value, settings.credentials_file.c_str(), nullptr));
  }
  check("cannot connect to NATS at " + servers_, natsConnection_Connect(&handles_->connection, options.value));
  jsOptions js_options = api_options(request_timeout_);
  check("JetStream context on " + servers_, natsConnection_JetStream(&handles_->js, handles_->connection, &js_options));
}

Connection::~Connection() = default;

std::optional<StreamInfo> Connection::stream_info(const std::string& name) {
  Owned<jsStreamInfo, jsStreamInfo_Destroy> info;
  jsErrCode code = static_cast<jsErrCode>(0);
  jsOptions options = api_options(request_timeout_);
  const natsStatus status = js_GetStreamInfo(&info.value, handles_->js, name.c_str(), &options, &code);
  if (status == NATS_NOT_FOUND || code == JSStreamNotFoundErr) return std::nullopt;
  check("stream info of " + name + " on " + servers_, status, code);
  return to_stream_info(*info.value);
}

StreamInfo Connection::add_stream(const StreamSpec& spec) {
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  const char* subjects[] = {spec.subjects.c_str()};
  config.Name = spec.name.c_str();
  config.Subjects = subjects;
  config.SubjectsLen = 1;
  config.Storage = js_FileStorage;
  config.Retention = js_LimitsPolicy;
  config.Replicas = spec.replicas;
  config.DenyDelete = spec.deny_delete;
  config.DenyPurge = spec.deny_purge;
  config.Duplicates = spec.duplicate_window_ns;
  config.MaxAge = spec.max_age_ns;
  config.MaxBytes = spec.max_bytes;
  Owned<jsStreamInfo, jsStreamInfo_Destroy> info;
  jsErrCode code = static_cast<jsErrCode>(0);
  jsOptions options = api_options(request_timeout_);
  check("creating stream " + spec.name + " on " + servers_,
        js_AddStream(&info.value, handles_->js, &config, &options, &code), code);
  return to_stream_info(*info.value);
}

void Connection::purge_stream(const std::string& name) {
  jsErrCode code = static_cast<jsErrCode>(0);
  jsOptions options = api_options(request_timeout_);
  check("purging stream " + name, js_PurgeStream(handles_->js, name.c_str(), &options, &code), code);
}

void Connection::delete_stream(const std::string& name) {
  jsErrCode code = static_cast<jsErrCode>(0);
  jsOptions options = api_options(request_timeout_);
  check("deleting stream " + name, js_DeleteStream(handles_->js, name.c_str(), &options, &code), code);
}

std::uint64_t Connection::publish(const std::string& subject, const std::string& body) {
  Owned<jsPubAck, jsPubAck_Destroy> ack;
  jsErrCode code = static_cast<jsErrCode>(0);
  check("publishing to " + subject,
        js_Publish(&ack.value, handles_->js, subject.c_str(), body.data(), static_cast<int>(body.size()), nullptr,
                   &code),
        code);
  return ack.value->Sequence;
}

Published Connection::publish(const std::string& subject, std::string_view body, const std::string& msg_id,
                              const std::string& stream) {
  Published published;
  if (body.size() > static_cast<std::size_t>(INT_MAX)) {
    published.status = NATS_MAX_PAYLOAD;
    published.error = "a body of " + std::to_string(body.size()) + " bytes is too large for NATS";
    return published;
  }
  Owned<natsMsg, natsMsg_Destroy> message;
  natsStatus status = natsMsg_Create(&message.value, subject.c_str(), nullptr, body.data(), static_cast<int>(body.size()));
  if (status != NATS_OK) {
    published.status = status;
    published.error = words(status);
    return published;
  }
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MsgId = msg_id.c_str();
  options.MaxWait = request_timeout_.count();
  // A message another stream captured would escape this stream's dedup: refused, not stored.
  options.ExpectStream = stream.c_str();
  Owned<jsPubAck, jsPubAck_Destroy> ack;
  jsErrCode code = static_cast<jsErrCode>(0);
  status = js_PublishMsg(&ack.value, handles_->js, message.value, &options, &code);
  if (status == NATS_OK) {
    published.stored = true;
    published.duplicate = ack.value->Duplicate;
    return published;
  }
  published.status = status;
  published.api_error = static_cast<int>(code);
  published.error = words(status, code);
  return published;
}

struct PullConsumer::Handles {
  natsSubscription* subscription = nullptr;
  ~Handles() {
    if (subscription == nullptr) return;
    // Deletes the ephemeral consumer now rather than when the server notices no interest.
    natsSubscription_Unsubscribe(subscription);
    natsSubscription_Destroy(subscription);
  }
};

PullConsumer::PullConsumer(Connection& connection, const std::string& stream, const std::string& subjects,
                           std::uint64_t start_sequence)
    : stream_(stream), handles_(std::make_unique<Handles>()) {
  jsSubOptions subscribe;
  jsSubOptions_Init(&subscribe);
  subscribe.Stream = stream_.c_str();
  subscribe.Config.AckPolicy = js_AckNone;
  subscribe.Config.DeliverPolicy = js_DeliverByStartSequence;
  subscribe.Config.OptStartSeq = start_sequence;
  jsErrCode code = static_cast<jsErrCode>(0);
  jsOptions options = api_options(connection.request_timeout_);
  check("pull consumer on stream " + stream_ + " from sequence " + std::to_string(start_sequence),
        js_PullSubscribe(&handles_->subscription, connection.handles_->js, subjects.c_str(), nullptr, &options,
                         &subscribe, &code),
        code);
}

PullConsumer::~PullConsumer() = default;

std::vector<StreamMessage> PullConsumer::fetch(int max, std::int64_t wait_ms) {
  natsMsgList list{};
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus status = natsSubscription_Fetch(&list, handles_->subscription, max, wait_ms, &code);
  std::vector<StreamMessage> messages;
  if (status == NATS_TIMEOUT) return messages;
  if (status != NATS_OK) {
    natsMsgList_Destroy(&list);
    fail("fetching from stream " + stream_, status, code);
  }
  messages.reserve(static_cast<std::size_t>(list.Count));
  for (int i = 0; i < list.Count; ++i) {
    natsMsg* message = list.Msgs[i];
    jsMsgMetaData* meta = nullptr;
    const natsStatus read = natsMsg_GetMetaData(&meta, message);
    if (read != NATS_OK) {
      natsMsgList_Destroy(&list);
      fail("a message of stream " + stream_ + " without JetStream metadata", read);
    }
    const char* data = natsMsg_GetData(message);
    const int length = natsMsg_GetDataLength(message);
    messages.push_back({meta->Sequence.Stream, data != nullptr && length > 0
                                                   ? std::string(data, static_cast<std::size_t>(length))
                                                   : std::string()});
    jsMsgMetaData_Destroy(meta);
  }
  natsMsgList_Destroy(&list);
  return messages;
}

}  // namespace tidemark::connectors::nats
