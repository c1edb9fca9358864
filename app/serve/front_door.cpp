#include "app/serve/front_door.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <initializer_list>

#include <boost/url/parse.hpp>

namespace tidemark::app::serve {

namespace bhttp = boost::beast::http;

const std::string& HttpRequest::header(const std::string& lower_case_name) const {
  static const std::string kEmpty;
  const auto found = headers.find(lower_case_name);
  return found == headers.end() ? kEmpty : found->second;
}

HttpRequest request_head(const RequestParser& parser) {
  const auto& message = parser.get();
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  for (const auto& field : message) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    request.headers[name] = std::string(field.value());
  }
  return request;
}

std::optional<std::string> refuse_head(const RequestParser& parser) {
  const auto& message = parser.get();
  // RFC 9112 §6.3: a request whose last transfer coding is not chunked has no knowable
  // length. Beast would read no body and parse the bytes that follow as the next request
  // (request smuggling behind a proxy that reads them as this one's body).
  if (message.count(bhttp::field::transfer_encoding) != 0 && !parser.chunked()) {
    return "Transfer-Encoding must end with chunked";
  }
  // Headers read as one value: a second copy would let one party's check and another's
  // use see different values.
  for (const char* name : {"authorization", "webhook-id", "webhook-timestamp", "webhook-signature"}) {
    if (message.count(name) > 1) return std::string("the ") + name + " header appears more than once";
  }
  return std::nullopt;
}

Route route_of(std::string_view target) {
  Route route;
  const auto url = boost::urls::parse_origin_form(target);
  if (!url) {
    route.kind = RouteKind::kBadTarget;
    return route;
  }
  route.path = std::string(url->path());
  for (auto segment : url->segments()) route.segments.push_back(segment);
  // The one list of routes: a pattern's nullptr matches any one segment (a parameter).
  struct Pattern {
    RouteKind kind;
    const char* method;
    std::initializer_list<const char*> segments;
  };
  static const Pattern kRoutes[] = {
      {RouteKind::kHealth, "GET", {"healthz"}},
      {RouteKind::kReady, "GET", {"readyz"}},
      {RouteKind::kMetrics, "GET", {"metrics"}},
      {RouteKind::kTrigger, "POST", {"v1", "pipelines", nullptr, "runs"}},
      {RouteKind::kRun, "GET", {"v1", "runs", nullptr}},
      {RouteKind::kPipelines, "GET", {"v1", "pipelines"}},
      {RouteKind::kRuns, "GET", {"v1", "runs"}},
      {RouteKind::kPipeline, "GET", {"v1", "pipelines", nullptr}},
      {RouteKind::kQuarantineList, "GET", {"v1", "quarantine"}},
      {RouteKind::kQuarantineEntry, "GET", {"v1", "quarantine", nullptr}},
      {RouteKind::kRelease, "POST", {"v1", "quarantine", nullptr, "release"}},
      {RouteKind::kOutboxList, "GET", {"v1", "outbox"}},
      {RouteKind::kOutboxRetry, "POST", {"v1", "outbox", nullptr, "retry"}},
      {RouteKind::kViews, "GET", {"v1", "views"}},
      {RouteKind::kAccountView, "GET", {"v1", "views", nullptr, "accounts", nullptr}},
  };
  const auto& path = route.segments;
  // The console's files may sit in folders (vendor/…): any path under /ui is its route,
  // and its handler answers 404 for a file it does not hold.
  if (!path.empty() && path.front() == "ui") {
    route.kind = RouteKind::kUi;
    route.method = "GET";
    return route;
  }
  const auto matches = [&](const Pattern& pattern) {
    if (path.size() != pattern.segments.size()) return false;
    std::size_t i = 0;
    for (const char* part : pattern.segments) {
      if (part != nullptr && path[i] != part) return false;
      ++i;
    }
    return true;
  };
  for (const Pattern& pattern : kRoutes) {
    if (matches(pattern)) {
      route.kind = pattern.kind;
      route.method = pattern.method;
      break;
    }
  }
  return route;
}

bool valid_webhook_id(std::string_view id) {
  return !id.empty() && id.size() <= kMaxWebhookIdBytes &&
         std::all_of(id.begin(), id.end(), [](unsigned char c) { return c >= 0x20 && c < 0x7f; });
}

}  // namespace tidemark::app::serve
