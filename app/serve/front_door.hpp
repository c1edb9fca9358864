#pragma once
// The front door of serve's HTTP API: what is decided about a request from its bytes alone,
// before a handler runs — its head as the API sees it, the requests refused outright
// (ambiguous framing, repeated credentials) and the route. Pure: no sockets, no database,
// so that tests/fuzz/http_front_door_fuzz.cpp drives exactly what the server runs.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "app/serve/http_message.hpp"

namespace tidemark::app::serve {

using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// Method, target and headers of what the parser has seen so far (also after a body error).
HttpRequest request_head(const RequestParser& parser);

// Why a request whose header is complete must be answered 400 without reading its body
// (the connection then closes: its framing cannot be trusted), or nullopt.
std::optional<std::string> refuse_head(const RequestParser& parser);

// The routes, each with its pattern in route_of's table and its handler in api.cpp's; the
// router (router.hpp) relies on this order: the two non-routes first, kAccountView last.
enum class RouteKind {
  kBadTarget,  // not an origin-form target: 400
  kNotFound,
  kHealth,
  kReady,
  kMetrics,
  kUi,               // GET /ui and /ui/{asset…}: the console's static files (no token)
  kTrigger,          // POST /v1/pipelines/{name}/runs
  kRun,              // GET /v1/runs/{id}
  kPipelines,        // GET /v1/pipelines
  kRuns,             // GET /v1/runs
  kPipeline,         // GET /v1/pipelines/{name}
  kQuarantineList,   // GET /v1/quarantine
  kQuarantineEntry,  // GET /v1/quarantine/{id}
  kRelease,          // POST /v1/quarantine/{id}/release
  kOutboxList,       // GET /v1/outbox
  kOutboxRetry,      // POST /v1/outbox/{id}/retry
  kViews,            // GET /v1/views
  kAccountView,      // GET /v1/views/{view}/accounts/{id}
};

struct Route {
  RouteKind kind = RouteKind::kNotFound;
  std::string method;                // the one method the route takes
  std::string path;                  // the target's path, for messages
  std::string malformed;             // kBadTarget: why
  std::vector<std::string> segments;  // decoded path segments

  // /healthz, /readyz, /metrics: answered on a lane of their own, never behind other requests.
  bool probe() const { return kind == RouteKind::kHealth || kind == RouteKind::kReady || kind == RouteKind::kMetrics; }
  // The /v1 reads and releases, which need TIDEMARK_API_TOKEN when it is set.
  bool needs_token() const { return kind >= RouteKind::kRun; }
};

// A target whose decoded path segments or query keys and values are not valid UTF-8 (or hold
// NUL) is kBadTarget: no handler ever passes such text on to PostgreSQL.
Route route_of(std::string_view target);

// The host of a Host header or of an authority, as Host writes it and in lower case, without
// the port: "LocalHost:8080" -> "localhost", "[::1]:8080" -> "[::1]".
std::string host_name(std::string_view authority);

// Serve without TIDEMARK_API_TOKEN answers whoever reaches it, a web page of another site in
// an operator's browser included. For the /v1 routes (Route::needs_token) this refuses:
//  - a Host whose host is not one of `host_names` (host_name's form: the listen address,
//    localhost, http.allowed_hosts): a name of another site's that resolves to serve's address
//    (DNS rebinding) reads nothing (403);
//  - a POST from another origin: an Origin whose authority is not the Host, or Sec-Fetch-Site
//    cross-site or same-site (403);
//  - a POST without Content-Type: application/json, which no HTML form can send, nor another
//    origin's script without a CORS preflight that serve never grants (415).
// With a token none of this applies: a browser never adds it on its own.
struct Refusal {
  int status = 0;
  std::string reason;
};
std::optional<Refusal> refuse_cross_site(const HttpRequest& request, const Route& route,
                                         const std::vector<std::string>& host_names);

// The webhook-ids serve records: 1 to 256 bytes of printable ASCII (what a Standard
// Webhooks sender generates; anything else is an attack on the index or the logs).
inline constexpr std::size_t kMaxWebhookIdBytes = 256;
bool valid_webhook_id(std::string_view id);

}  // namespace tidemark::app::serve
