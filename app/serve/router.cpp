#include "app/serve/router.hpp"

#include <stdexcept>
#include <utility>

#include <openssl/crypto.h>

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "app/serve/api.hpp"
#include "app/serve/handlers.hpp"
#include "pipeline/store/pg/database.hpp"

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
  } catch (const pipeline::db::RetriesExhausted& error) {
    spdlog::warn("{} {}: {}", request.method, request.target, error.what());
    return error_response(503, "database unavailable; try again later");
  } catch (const std::exception& error) {
    spdlog::error("{} {}: {}", request.method, request.target, error.what());
    return error_response(500, "internal error; see the server log");
  }
}

}  // namespace tidemark::app::serve
