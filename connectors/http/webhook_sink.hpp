#pragma once
// The HTTP webhook sink: POSTs each outbox event, signed with Standard Webhooks headers, to
// one destination URL over kept-alive connections. Boost.Beast stays inside the .cpp.
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "pipeline/core/sink.hpp"

namespace tidemark::connectors::http {

struct WebhookOptions {
  std::string url;          // http://host[:port]/path or https://host[:port]/path
  std::string ca_file;      // https: PEM bundle trusted instead of the system store (empty: the system store)
  std::string signing_key;  // the key bytes of the destination's whsec_ secret
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(5);
  std::chrono::milliseconds request_timeout = std::chrono::seconds(10);  // writing the request and reading the answer
  std::size_t max_idle_connections = 16;                          // kept alive between deliveries
};

// Classifies an HTTP status as docs/delivery.md "How the answer is read" says: 2xx delivered; 408, 429
// and 5xx retry; everything else (other 4xx, and redirects, which are not followed) dead.
pipeline::DeliveryResult classify_status(int status, std::string_view retry_after_header,
                                                std::string_view body);

// The idempotency key as it goes into the webhook-id and Idempotency-Key headers (and the
// signed content): printable ASCII, so that every receiver reads the same bytes whatever
// charset it decodes headers with. Bytes outside 0x21-0x7E, and '%' itself, are
// percent-encoded (%XX, upper case); a key of printable ASCII without '%' goes as it is.
// Reversible, and the same on every attempt.
std::string header_id(std::string_view idempotency_key);

class WebhookSink final : public pipeline::Sink {
 public:
  // Throws OptionsError when the URL is not an http:// or https:// URL, or when the
  // trust store of an https:// URL cannot be loaded.
  explicit WebhookSink(WebhookOptions options);
  ~WebhookSink() override;
  WebhookSink(const WebhookSink&) = delete;
  WebhookSink& operator=(const WebhookSink&) = delete;

  boost::asio::awaitable<pipeline::DeliveryResult> deliver(pipeline::OutboxEvent event) override;
  std::optional<boost::asio::any_io_executor> executor() const override;

 private:
  class Client;
  std::unique_ptr<Client> client_;
};

}  // namespace tidemark::connectors::http
