#include "tests/support/nats_sink_stream.hpp"

#include <nats/nats.h>

#include <memory>
#include <stdexcept>

namespace tidemark::testing {

namespace {

void check(natsStatus status, const std::string& what) {
  if (status == NATS_OK) return;
  const char* detail = nats_GetLastError(nullptr);
  throw std::runtime_error(what + ": " + natsStatus_GetText(status) + (detail != nullptr ? std::string(": ") + detail : ""));
}

// A connection and its JetStream context, closed with the object.
struct Client {
  explicit Client(const std::string& url) {
    check(natsConnection_ConnectTo(&connection, url.c_str()), "connect to " + url);
    check(natsConnection_JetStream(&js, connection, nullptr), "JetStream on " + url);
  }
  ~Client() {
    jsCtx_Destroy(js);
    natsConnection_Destroy(connection);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  natsConnection* connection = nullptr;
  jsCtx* js = nullptr;
};

}  // namespace

std::vector<StoredMessage> read_stream(const std::string& url, const std::string& stream) {
  const Client client(url);
  jsStreamInfo* raw_info = nullptr;
  check(js_GetStreamInfo(&raw_info, client.js, stream.c_str(), nullptr, nullptr), "stream info of " + stream);
  const std::unique_ptr<jsStreamInfo, void (*)(jsStreamInfo*)> info(raw_info, jsStreamInfo_Destroy);
  std::vector<StoredMessage> messages;
  if (info->State.Msgs == 0) return messages;
  for (std::uint64_t sequence = info->State.FirstSeq; sequence <= info->State.LastSeq; ++sequence) {
    natsMsg* raw = nullptr;
    const natsStatus status = js_GetMsg(&raw, client.js, stream.c_str(), sequence, nullptr, nullptr);
    if (status == NATS_NOT_FOUND) continue;  // a deleted message leaves a hole
    check(status, "message " + std::to_string(sequence) + " of " + stream);
    const std::unique_ptr<natsMsg, void (*)(natsMsg*)> message(raw, natsMsg_Destroy);
    StoredMessage stored;
    stored.sequence = sequence;
    stored.subject = natsMsg_GetSubject(raw);
    const char* id = nullptr;
    if (natsMsgHeader_Get(raw, "Nats-Msg-Id", &id) == NATS_OK) stored.msg_id = id;
    stored.data.assign(natsMsg_GetData(raw), static_cast<std::size_t>(natsMsg_GetDataLength(raw)));
    messages.push_back(std::move(stored));
  }
  return messages;
}

std::map<std::string, int> count_by_msg_id(const std::vector<StoredMessage>& messages) {
  std::map<std::string, int> counts;
  for (const auto& message : messages) ++counts[message.msg_id];
  return counts;
}

void create_stream(const std::string& url, const std::string& stream, const std::vector<std::string>& subjects,
                   std::chrono::nanoseconds duplicates) {
  const Client client(url);
  std::vector<const char*> subject_pointers;
  for (const auto& subject : subjects) subject_pointers.push_back(subject.c_str());
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  config.Name = stream.c_str();
  config.Subjects = subject_pointers.data();
  config.SubjectsLen = static_cast<int>(subject_pointers.size());
  config.Duplicates = duplicates.count();
  jsStreamInfo* info = nullptr;
  check(js_AddStream(&info, client.js, &config, nullptr, nullptr), "create stream " + stream);
  jsStreamInfo_Destroy(info);
}

}  // namespace tidemark::testing
