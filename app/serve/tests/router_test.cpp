// serve's router: the route table must name one handler for every route, and the
// answers every route shares (400, 413, 404, 405, 401, 503, 500) come from the router,
// before and around the handler. No sockets and no database: requests are plain values.
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app/serve/router.hpp"
#include "pipeline/core/error.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::app::serve {
namespace {

constexpr RouteKind kAllRoutes[] = {RouteKind::kHealth,         RouteKind::kReady,          RouteKind::kMetrics,
                                    RouteKind::kUi,
                                    RouteKind::kTrigger,        RouteKind::kRun,            RouteKind::kPipelines,
                                    RouteKind::kRuns,           RouteKind::kPipeline,
                                    RouteKind::kQuarantineList, RouteKind::kQuarantineEntry, RouteKind::kRelease,
                                    RouteKind::kOutboxList,     RouteKind::kOutboxRetry,    RouteKind::kViews,
                                    RouteKind::kAccountView};

// A handler that answers with its route's decoded segments, joined by '|'.
HttpResponse echo(const HttpRequest&, const Route& route) {
  std::string joined;
  for (const auto& segment : route.segments) joined += (joined.empty() ? "" : "|") + segment;
  return HttpResponse{200, "text/plain", joined, {}};
}

std::vector<RouteHandler> table_of_echoes() {
  std::vector<RouteHandler> table;
  for (RouteKind kind : kAllRoutes) table.push_back({kind, echo, kind == RouteKind::kTrigger});
  return table;
}

// What a Host may name without a token (the Service gives the listen address and localhost).
const std::vector<std::string> kHostNames = {"127.0.0.1", "localhost"};

// A request as curl sends it to 127.0.0.1:8080.
HttpRequest request(const std::string& method, const std::string& target) {
  HttpRequest request;
  request.method = method;
  request.target = target;
  request.headers["host"] = "127.0.0.1:8080";
  if (method == "POST") request.headers["content-type"] = "application/json";
  return request;
}

// The router's answer to `request` is `status` with exactly `body`.
void expect_answer(const Router& router, const HttpRequest& request, int status, const std::string& body) {
  const HttpResponse answer = router.dispatch(request);
  EXPECT_EQ(answer.status, status) << request.method << " " << request.target;
  EXPECT_EQ(answer.body, body) << request.method << " " << request.target;
}

TEST(RouterTest, ATableWithoutAHandlerForEveryRouteIsRefused) {
  auto missing = table_of_echoes();
  missing.pop_back();
  EXPECT_THROW(Router(missing, std::nullopt, kHostNames), std::logic_error);
  auto twice = table_of_echoes();
  twice.push_back({RouteKind::kRun, echo});
  EXPECT_THROW(Router(twice, std::nullopt, kHostNames), std::logic_error);
  auto not_a_route = table_of_echoes();
  not_a_route.push_back({RouteKind::kNotFound, echo});
  EXPECT_THROW(Router(not_a_route, std::nullopt, kHostNames), std::logic_error);
  EXPECT_NO_THROW(Router(table_of_echoes(), std::nullopt, kHostNames));
}

TEST(RouterTest, RoutesReachTheirHandlerWithDecodedSegments) {
  const Router router(table_of_echoes(), std::nullopt, kHostNames);
  const HttpResponse run = router.dispatch(request("GET", "/v1/runs/7"));
  EXPECT_EQ(run.status, 200);
  EXPECT_EQ(run.body, "v1|runs|7");
  EXPECT_EQ(router.dispatch(request("GET", "/v1/views/account_balance/accounts/a%2Fb")).body,
            "v1|views|account_balance|accounts|a/b");
  EXPECT_EQ(router.dispatch(request("GET", "/ui/vendor/uplot/uPlot.min.js")).body, "ui|vendor|uplot|uPlot.min.js")
      << "every path under /ui is the console's, folders included";
  EXPECT_EQ(router.dispatch(request("GET", "/ui")).body, "ui");
}

TEST(RouterTest, SharedAnswersAreTheRoutersAndByteExact) {
  const Router router(table_of_echoes(), std::string("secret"), kHostNames);
  expect_answer(router, request("GET", "http://example.com/x"), 400, "{\"error\":\"malformed request target\"}\n");
  expect_answer(router, request("GET", "/v2/nothing?x=1"), 404, "{\"error\":\"no such route: /v2/nothing\"}\n");
  expect_answer(router, request("DELETE", "/v1/runs/7"), 405, "{\"error\":\"method not allowed; use GET\"}\n");
  const HttpResponse wrong_method = router.dispatch(request("DELETE", "/v1/runs/7"));
  ASSERT_EQ(wrong_method.headers.size(), 1u);
  EXPECT_EQ(wrong_method.headers[0], (std::pair<std::string, std::string>{"Allow", "GET"}));

  expect_answer(router, request("GET", "/v1/pipelines"), 401,
                "{\"error\":\"missing or wrong bearer token (TIDEMARK_API_TOKEN)\"}\n");
  HttpRequest with_token = request("GET", "/v1/pipelines");
  with_token.headers["authorization"] = "Bearer secret";
  EXPECT_EQ(router.dispatch(with_token).status, 200);
  EXPECT_EQ(router.dispatch(request("GET", "/healthz")).status, 200) << "probes need no token";
  EXPECT_EQ(router.dispatch(request("GET", "/ui/")).status, 200) << "the console's files need no token";
}

TEST(RouterTest, AnOversizedBodyIs413UnlessTheRouteAnswersItItself) {
  const Router router(table_of_echoes(), std::nullopt, kHostNames);
  for (const auto& [method, target] : {std::pair{"POST", "/v1/quarantine/3/release"}, {"GET", "/nowhere"}}) {
    HttpRequest large = request(method, target);
    large.body_too_large = true;
    expect_answer(router, large, 413, "{\"error\":\"request body over 65536 bytes\"}\n");
  }
  HttpRequest trigger = request("POST", "/v1/pipelines/p/runs");
  trigger.body_too_large = true;
  EXPECT_EQ(router.dispatch(trigger).status, 200) << "the trigger handler counts and answers it";
}

TEST(RouterTest, AHandlersExceptionIs503ForTheDatabaseAnd500Otherwise) {
  auto table = table_of_echoes();
  table[static_cast<int>(RouteKind::kRun) - static_cast<int>(RouteKind::kHealth)].handle =
      [](const HttpRequest&, const Route&) -> HttpResponse { throw pipeline::db::RetriesExhausted("down"); };
  table[static_cast<int>(RouteKind::kPipelines) - static_cast<int>(RouteKind::kHealth)].handle =
      [](const HttpRequest&, const Route&) -> HttpResponse { throw std::runtime_error("bug"); };
  const Router router(table, std::nullopt, kHostNames);
  expect_answer(router, request("GET", "/v1/runs/1"), 503, "{\"error\":\"database unavailable; try again later\"}\n");
  expect_answer(router, request("GET", "/v1/pipelines"), 500, "{\"error\":\"internal error; see the server log\"}\n");
}

TEST(RouterTest, AHandlersErrorIsAnsweredByItsKind) {
  const auto throwing = [](ErrorKind kind) {
    return [kind](const HttpRequest&, const Route&) -> HttpResponse { throw Error(kind, "in the way"); };
  };
  const auto answer_to = [&](ErrorKind kind) {
    auto table = table_of_echoes();
    table[static_cast<int>(RouteKind::kPipelines) - static_cast<int>(RouteKind::kHealth)].handle = throwing(kind);
    return Router(table, std::nullopt, kHostNames).dispatch(request("GET", "/v1/pipelines"));
  };
  EXPECT_EQ(answer_to(ErrorKind::kConflict).status, 409);
  EXPECT_EQ(answer_to(ErrorKind::kConflict).body, "{\"error\":\"in the way\"}\n");
  EXPECT_EQ(answer_to(ErrorKind::kTransient).status, 503);
  for (const ErrorKind kind : {ErrorKind::kUsage, ErrorKind::kConfig, ErrorKind::kPermanent}) {
    EXPECT_EQ(answer_to(kind).body, "{\"error\":\"internal error; see the server log\"}\n");
    EXPECT_EQ(answer_to(kind).status, 500);
  }
}

TEST(RouterTest, APathOrQueryThatIsNotUtf8OnceDecodedIs400) {
  const Router router(table_of_echoes(), std::nullopt, kHostNames);
  const std::string not_utf8 = "{\"error\":\"the request target is not valid UTF-8 once percent-decoded\"}\n";
  for (const char* target : {"/v1/runs/%ff", "/v1/pipelines/%c3", "/v1/runs?pipeline=%c3", "/v1/quarantine?%ff=1",
                             "/v1/runs?pipeline=a%00b", "/v1/views/account_balance/accounts/%ed%a0%80"}) {
    expect_answer(router, request("GET", target), 400, not_utf8);
  }
  EXPECT_EQ(router.dispatch(request("GET", "/v1/pipelines/caf%c3%a9")).body, "v1|pipelines|caf\xc3\xa9");
}

TEST(RouterTest, WithoutATokenAnotherSitesRequestIsRefusedAndServesOwnIsNot) {
  const Router router(table_of_echoes(), std::nullopt, kHostNames);
  const auto with = [](HttpRequest request, const std::string& name, const std::string& value) {
    if (value.empty()) {
      request.headers.erase(name);
    } else {
      request.headers[name] = value;
    }
    return request;
  };
  const HttpRequest release = request("POST", "/v1/quarantine/3/release");
  // DNS rebinding: a name of the attacker's that resolves to 127.0.0.1.
  EXPECT_EQ(router.dispatch(with(request("GET", "/v1/pipelines"), "host", "evil.example:8080")).status, 403);
  EXPECT_EQ(router.dispatch(with(request("GET", "/v1/pipelines"), "host", "")).status, 403);
  EXPECT_EQ(router.dispatch(with(release, "host", "evil.example")).status, 403);
  // A form or script of another origin.
  EXPECT_EQ(router.dispatch(with(release, "origin", "http://evil")).status, 403);
  EXPECT_EQ(router.dispatch(with(release, "origin", "null")).status, 403);
  EXPECT_EQ(router.dispatch(with(release, "origin", "http://127.0.0.1:9999")).status, 403) << "another port";
  EXPECT_EQ(router.dispatch(with(release, "sec-fetch-site", "cross-site")).status, 403);
  EXPECT_EQ(router.dispatch(with(release, "sec-fetch-site", "same-site")).status, 403);
  EXPECT_EQ(router.dispatch(with(request("POST", "/v1/outbox/4/retry"), "content-type", "text/plain")).status, 415);
  EXPECT_EQ(router.dispatch(with(release, "content-type", "application/x-www-form-urlencoded")).status, 415);
  EXPECT_EQ(router.dispatch(with(release, "content-type", "")).status, 415);
  // Serve's own page (the console), curl, and names serve answers to.
  HttpRequest own = with(with(release, "origin", "http://127.0.0.1:8080"), "sec-fetch-site", "same-origin");
  EXPECT_EQ(router.dispatch(own).status, 200);
  EXPECT_EQ(router.dispatch(with(release, "content-type", "Application/JSON; charset=utf-8")).status, 200);
  EXPECT_EQ(router.dispatch(with(request("GET", "/v1/pipelines"), "host", "LOCALHOST:8080")).status, 200);
  EXPECT_EQ(router.dispatch(with(request("GET", "/v1/pipelines"), "host", "localhost")).status, 200);
  // Not /v1: the probes and the console's files hold nothing to take; a trigger is signed.
  EXPECT_EQ(router.dispatch(with(request("GET", "/healthz"), "host", "evil.example")).status, 200);
  EXPECT_EQ(router.dispatch(with(request("GET", "/ui/"), "host", "evil.example")).status, 200);
  EXPECT_EQ(router.dispatch(with(with(request("POST", "/v1/pipelines/p/runs"), "origin", "http://evil"), "content-type",
                                 "text/plain"))
                .status,
            200);
  // With a token, the token decides.
  const Router with_token(table_of_echoes(), std::string("secret"), kHostNames);
  EXPECT_EQ(with_token.dispatch(with(with(release, "authorization", "Bearer secret"), "host", "tidemark.example")).status,
            200);
}

TEST(RouterTest, HostNameIsTheHostOfAnAuthorityInLowerCaseWithoutItsPort) {
  EXPECT_EQ(host_name("LocalHost:8080"), "localhost");
  EXPECT_EQ(host_name("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(host_name("[::1]:8080"), "[::1]");
  EXPECT_EQ(host_name("[::1"), "");
  EXPECT_EQ(host_name(""), "");
}

}  // namespace
}  // namespace tidemark::app::serve
