#pragma once
// Serve's router: route_of (front_door.cpp) names the route of a request; a table maps each
// route to its handler. The router gives the answers every route shares — 400 for a
// malformed target, 413 for a body over the limit, 404, 405 with Allow, 401 without the
// bearer token, 403 and 415 for another site's request when there is no token
// (refuse_cross_site) — and turns a handler's exception into 503 (database unavailable) or 500.
// Adding a route: a RouteKind and its pattern in front_door.cpp, a handler, a table line.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "app/serve/front_door.hpp"
#include "app/serve/http_message.hpp"

namespace tidemark::app::serve {

struct RouteHandler {
  RouteKind kind;
  std::function<HttpResponse(const HttpRequest&, const Route&)> handle;
  // The handler answers an oversized body itself (a run trigger counts it); for the others
  // the router answers 413.
  bool answers_oversized_body = false;
};

class Router {
 public:
  // Throws std::logic_error unless every route route_of can name has exactly one handler.
  // `host_names`: what a Host may name when there is no token (refuse_cross_site).
  Router(std::vector<RouteHandler> table, std::optional<std::string> api_token, std::vector<std::string> host_names);

  HttpResponse dispatch(const HttpRequest& request) const;

 private:
  bool authorized(const HttpRequest& request) const;

  std::vector<RouteHandler> table_;  // indexed by RouteKind
  std::optional<std::string> api_token_;
  std::vector<std::string> host_names_;
};

}  // namespace tidemark::app::serve
