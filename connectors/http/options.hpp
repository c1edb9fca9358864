#pragma once
// What a `kind: http` destination is configured with (docs/delivery.md), checked by the
// config parser. Plain values: app/wiring turns them into WebhookOptions (webhook_sink.hpp),
// resolving secret_env to the secret's bytes, since a connector does not read the environment.
#include <string>

namespace tidemark::connectors::http {

struct HttpDestinationOptions {
  std::string url;         // where events are POSTed (http:// or https://)
  std::string secret_env;  // the environment variable holding the whsec_… signing secret
  std::string ca_file;     // https:// only: a PEM bundle trusted instead of the system store
};

}  // namespace tidemark::connectors::http
