// libFuzzer target: serve's HTTP front door. The input is the bytes a client
// sends; they go through what the server runs before a handler: the Beast request parser
// with serve's header and body limits, refuse_head (framing and repeated credentials),
// request_head, route_of, the rules for requests without a token (refuse_cross_site), the
// webhook-id rule and Standard Webhooks verification.
// Besides "no crash, no leak, no undefined behaviour", it checks:
//  - a refused head is never routed (its body must not be read);
//  - every route has a method, and only /v1 routes need the token;
//  - a routed target's decoded segments are valid UTF-8 without NUL;
//  - without a token, only /v1 routes are refused, with 403 or 415;
//  - the request's own fields, signed with the key, verify; with the body changed, not.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/buffer.hpp>

#include "app/serve/front_door.hpp"
#include "connectors/http/signature.hpp"
#include "pipeline/core/utf8.hpp"

namespace {

namespace bhttp = boost::beast::http;
using namespace tidemark::app::serve;
namespace signature = tidemark::connectors::http;

constexpr std::uint32_t kHeaderLimit = 16 * 1024;  // as the server sets it
constexpr std::uint64_t kBodyLimit = 64 * 1024;
constexpr std::int64_t kNow = 1'700'000'000;
constexpr std::string_view kKey = "tidemark-fuzz-key";
const std::vector<std::string> kHostNames = {"127.0.0.1", "localhost"};

void require(bool condition) {
  if (!condition) std::abort();
}

void check_signature(const HttpRequest& request) {
  const std::string& id = request.header("webhook-id");
  const signature::SignedHeaders received{id, request.header("webhook-timestamp"), request.header("webhook-signature")};
  (void)signature::to_string(signature::verify(kKey, received, request.body, kNow));
  if (!valid_webhook_id(id)) return;
  const std::string timestamp = std::to_string(kNow);
  const std::string signed_value = signature::sign(kKey, id, kNow, request.body);
  require(signature::verify(kKey, {id, timestamp, signed_value}, request.body, kNow) == signature::Verification::kValid);
  const std::string changed = request.body + "x";
  require(signature::verify(kKey, {id, timestamp, signed_value}, changed, kNow) ==
          signature::Verification::kSignatureMismatch);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  RequestParser parser;
  parser.header_limit(kHeaderLimit);
  parser.body_limit(kBodyLimit);
  boost::beast::error_code error;
  std::size_t offset = 0;
  bool header_checked = false;
  while (!parser.is_done()) {
    const std::size_t used = parser.put(boost::asio::const_buffer(data + offset, size - offset), error);
    offset += used;
    if (error == bhttp::error::need_more) error = {};
    if (error) break;
    if (parser.is_header_done() && !header_checked) {
      header_checked = true;
      if (refuse_head(parser)) return 0;  // answered 400 unread, never routed
    }
    if (used == 0) {
      // Everything there was has been offered: the client closed (as Beast's read does it).
      if (parser.got_some()) parser.put_eof(error);
      break;
    }
  }
  if (!parser.is_header_done()) return 0;  // a malformed or cut-off head: 400 or nothing
  if (!header_checked && refuse_head(parser)) return 0;

  HttpRequest request = request_head(parser);
  if (!error) request.body = parser.get().body();
  const Route route = route_of(request.target);
  require(route.kind == RouteKind::kBadTarget || route.kind == RouteKind::kNotFound || !route.method.empty());
  require(!route.needs_token() || (!route.segments.empty() && route.segments[0] == "v1"));
  require(!route.probe() || route.segments.size() == 1);
  if (route.kind == RouteKind::kTrigger) require(route.segments.size() == 4 && route.method == "POST");
  if (route.kind != RouteKind::kBadTarget) {
    for (const auto& segment : route.segments) require(tidemark::pipeline::is_storable_text(segment));
  }
  if (const auto refusal = refuse_cross_site(request, route, kHostNames)) {
    require(route.needs_token() && (refusal->status == 403 || refusal->status == 415));
  }
  check_signature(request);
  return 0;
}
