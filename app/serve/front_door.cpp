#include "app/serve/front_door.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <initializer_list>

#include <boost/url/parse.hpp>

#include "pipeline/core/utf8.hpp"

namespace tidemark::app::serve {

namespace bhttp = boost::beast::http;

namespace {

std::string lower_case(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower;
}

// The decoded segments and query of a parsed target are text PostgreSQL stores as it is.
bool storable_target(const boost::urls::url_view& url) {
  for (const auto& segment : url.segments()) {
    if (!pipeline::is_storable_text(segment)) return false;
  }
  for (const auto& param : url.params()) {
    if (!pipeline::is_storable_text(param.key) || !pipeline::is_storable_text(param.value)) return false;
  }
  return true;
}

// "application/json; charset=utf-8" -> "application/json".
std::string media_type(std::string_view content_type) {
  content_type = content_type.substr(0, content_type.find(';'));
  const auto first = content_type.find_first_not_of(" \t");
  if (first == std::string_view::npos) return "";
  content_type = content_type.substr(first, content_type.find_last_not_of(" \t") - first + 1);
  return lower_case(content_type);
}

}  // namespace

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
    request.headers[lower_case(field.name_string())] = std::string(field.value());
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
    route.malformed = "malformed request target";
    return route;
  }
  if (!storable_target(*url)) {
    route.kind = RouteKind::kBadTarget;
    route.malformed = "the request target is not valid UTF-8 once percent-decoded";
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

std::string host_name(std::string_view authority) {
  const auto end = authority.starts_with('[') ? authority.find(']') + 1 : authority.find(':');
  return lower_case(authority.substr(0, end));
}

std::optional<Refusal> refuse_cross_site(const HttpRequest& request, const Route& route,
                                         const std::vector<std::string>& host_names) {
  if (!route.needs_token()) return std::nullopt;
  const std::string& host = request.header("host");
  if (std::find(host_names.begin(), host_names.end(), host_name(host)) == host_names.end()) {
    return Refusal{403, "Host \"" + host + "\" is not a name of this server (the listen address, localhost or http.allowed_hosts)"};
  }
  if (route.method != "POST") return std::nullopt;
  const std::string fetch_site = lower_case(request.header("sec-fetch-site"));
  if (fetch_site == "cross-site" || fetch_site == "same-site") {
    return Refusal{403, "a request from another site (Sec-Fetch-Site: " + fetch_site + ") is refused without a token"};
  }
  if (const auto found = request.headers.find("origin"); found != request.headers.end()) {
    const std::string& origin = found->second;
    const auto scheme_end = origin.find("://");
    const std::string authority = scheme_end == std::string::npos ? "" : lower_case(origin.substr(scheme_end + 3));
    if (authority.empty() || authority != lower_case(host)) {
      return Refusal{403, "a request from another origin (Origin: " + origin + ") is refused without a token"};
    }
  }
  if (media_type(request.header("content-type")) != "application/json") {
    return Refusal{415, "a POST needs Content-Type: application/json"};
  }
  return std::nullopt;
}

bool valid_webhook_id(std::string_view id) {
  return !id.empty() && id.size() <= kMaxWebhookIdBytes &&
         std::all_of(id.begin(), id.end(), [](unsigned char c) { return c >= 0x20 && c < 0x7f; });
}

}  // namespace tidemark::app::serve
