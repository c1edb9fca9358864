#include "app/serve/router.hpp"

#include <stdexcept>
#include <utility>

#include <openssl/crypto.h>

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "app/serve/api.hpp"
#include "app/serve/handlers.hpp"
#include "pipeline/core/error.hpp"

namespace tidemark::app::serve {

namespace {

// Every RouteKind with a handler: all of them but the two route_of gives for no route.
constexpr int kFirstHandled = static_cast<int>(RouteKind::kHealth);
constexpr int kLastHandled = static_cast<int>(RouteKind::kAccountView);

HttpResponse method_not_allowed(const std::string& allowed) {
  HttpResponse response = error_response(405, "method not allowed; use " + allowed);
  response.headers.emplace_back("Allow", allowed);
  return response;
}

HttpResponse body_too_large() {
  return error_response(413, "request body over " + std::to_string(kMaxBodyBytes) + " bytes");
}

// A handler's error answered by its kind alone (docs/architecture.md "Errors"). A conflict is
// the request meeting the state (the entry released already, the pipeline busy): 409 with the
// message, which says what is in the way. A transient failure is worth trying again, and the
// only one a handler meets is the database's. Anything else is the server's own failure, a
// usage or config error included (a bad request is answered 400 before anything throws): 500,
// its detail in the server log only.
HttpResponse error_answer(const HttpRequest& request, const Error& error) {
  switch (error.kind()) {
    case ErrorKind::kConflict:
      return error_response(409, error.what());
    case ErrorKind::kTransient:
      spdlog::warn("{} {}: {}", request.method, request.target, error.what());
      return error_response(503, "database unavailable; try again later");
    case ErrorKind::kUsage:
    case ErrorKind::kConfig:
    case ErrorKind::kPermanent:
      break;
  }
  spdlog::error("{} {}: {}", request.method, request.target, error.what());
  return error_response(500, "internal error; see the server log");
}

}  // namespace

Router::Router(std::vector<RouteHandler> table, std::optional<std::string> api_token,
               std::vector<std::string> host_names)
    : api_token_(std::move(api_token)), host_names_(std::move(host_names)) {
  table_.resize(kLastHandled + 1);
  for (auto& entry : table) {
    const int kind = static_cast<int>(entry.kind);
    if (kind < kFirstHandled || kind > kLastHandled || table_[kind].handle) {
      throw std::logic_error("route table: route " + std::to_string(kind) + " is not a route or has two handlers");
    }
    table_[kind] = std::move(entry);
  }
  for (int kind = kFirstHandled; kind <= kLastHandled; ++kind) {
    if (!table_[kind].handle) throw std::logic_error("route table: route " + std::to_string(kind) + " has no handler");
  }
}

bool Router::authorized(const HttpRequest& request) const {
  if (!api_token_) return true;
  const std::string expected = "Bearer " + *api_token_;
  const std::string& given = request.header("authorization");
  return given.size() == expected.size() && CRYPTO_memcmp(given.data(), expected.data(), given.size()) == 0;
}

HttpResponse Router::dispatch(const HttpRequest& request) const {
  const Route route = route_of(request.target);
  if (route.kind == RouteKind::kBadTarget) return error_response(400, route.malformed);
  const RouteHandler* entry = route.kind == RouteKind::kNotFound ? nullptr : &table_[static_cast<int>(route.kind)];
  if (request.body_too_large && (entry == nullptr || !entry->answers_oversized_body)) return body_too_large();
  if (entry == nullptr) return error_response(404, "no such route: " + route.path);
  if (request.method != route.method) return method_not_allowed(route.method);
  if (!api_token_) {
    if (const auto refusal = refuse_cross_site(request, route, host_names_)) {
      return error_response(refusal->status, refusal->reason);
    }
  }
  if (route.needs_token() && !authorized(request)) {
    HttpResponse response = error_response(401, "missing or wrong bearer token (TIDEMARK_API_TOKEN)");
    response.headers.emplace_back("WWW-Authenticate", "Bearer");
    return response;
  }
  try {
    return entry->handle(request, route);
  } catch (const Error& error) {
    return error_answer(request, error);
  } catch (const std::exception& error) {
    spdlog::error("{} {}: {}", request.method, request.target, error.what());
    return error_response(500, "internal error; see the server log");
  }
}

}  // namespace tidemark::app::serve
