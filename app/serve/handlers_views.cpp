// GET /v1/views: every version of every view, as `tidemark views list` shows them (the lag in
// whole milliseconds, as every duration of the API).
// GET /v1/views/account_balance/accounts/{id}?min_sequence=S&timeout_ms=T: read-your-writes.
#include <algorithm>
#include <chrono>
#include <cmath>

#include <boost/json.hpp>
#include <boost/url/parse.hpp>

#include "app/serve/handlers.hpp"
#include "pipeline/views/admin.hpp"
#include "pipeline/views/views.hpp"

namespace tidemark::app::serve {

namespace {

constexpr std::int64_t kDefaultViewWaitMs = 5000;
constexpr std::int64_t kMaxViewWaitMs = 30000;
constexpr std::chrono::milliseconds kViewPollInterval{50};

}  // namespace

HttpResponse list_views(ApiContext& context, const HttpRequest& request, const Route&) {
  const auto url = boost::urls::parse_origin_form(request.target);
  if (const auto params = url->params(); !params.empty()) {
    return error_response(400, "unknown query parameter \"" + (*params.begin()).key + "\" (GET /v1/views takes none)");
  }
  std::vector<pipeline::views::ViewVersion> versions;
  context.pool.with_connection("reading the views", [&](pqxx::connection& connection) {
    versions = pipeline::views::list_views(connection);
  });
  boost::json::array list;
  for (const auto& version : versions) {
    list.push_back(boost::json::object{{"view", version.name},
                                       {"version", version.version},
                                       {"table", pipeline::views::table_name(version.name, version.version)},
                                       {"status", version.status},
                                       {"lag_ms", std::llround(version.lag_seconds * 1000)},
                                       {"pending", version.pending},
                                       {"dead", version.dead},
                                       {"created_at", version.created_at},
                                       {"position", version.position}});
  }
  return json_response(200, boost::json::object{{"views", std::move(list)}});
}

HttpResponse account_view(ApiContext& context, const HttpRequest& request, const Route& route) {
  const std::string& view = route.segments[2];
  const std::string& account = route.segments[4];
  if (view != pipeline::views::kAccountBalance) {
    return error_response(404, "no per-account view \"" + view + "\" (accounts are in account_balance)");
  }
  const auto url = boost::urls::parse_origin_form(request.target);
  std::int64_t min_sequence = 0;
  std::int64_t timeout_ms = kDefaultViewWaitMs;
  for (const auto& param : url->params()) {
    const auto parsed = positive_integer(param.value);
    if (param.key == "min_sequence" && parsed) {
      min_sequence = *parsed;
    } else if (param.key == "timeout_ms" && parsed && *parsed <= kMaxViewWaitMs) {
      timeout_ms = *parsed;
    } else {
      return error_response(400, "query parameters: min_sequence (a positive integer) and timeout_ms (1 to " +
                                     std::to_string(kMaxViewWaitMs) + "); got \"" + param.key + "\"");
    }
  }
  // Read-your-writes: wait until the view has applied the account's sequence S (the view
  // is fed by the relay, in another transaction). Each look is one read; between looks the
  // server waits on a timer of its io_context, so slow waits never hold a worker thread.
  std::optional<pipeline::views::AccountBalance> reading;
  context.pool.with_connection("reading account_balance", [&](pqxx::connection& connection) {
    reading = pipeline::views::read_account_balance(connection, account);
  });
  if (!reading) return error_response(404, "account_balance has no live version; see `tidemark views list`");
  if (reading->sequence >= min_sequence) {
    return json_response(200, boost::json::object{{"view", pipeline::views::table_name(view, reading->view_version)},
                                                  {"account_id", account},
                                                  {"balance", reading->balance},
                                                  {"sequence", reading->sequence},
                                                  {"updated_at", reading->updated_at}});
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      request.received + std::chrono::milliseconds(timeout_ms) - std::chrono::steady_clock::now());
  if (left.count() <= 0) {
    return error_response(409, "account_balance has applied sequence " + std::to_string(reading->sequence) +
                                   " of account " + account + ", not yet " + std::to_string(min_sequence) +
                                   " (waited " + std::to_string(timeout_ms) + " ms)");
  }
  HttpResponse again;
  again.retry_after = std::min(left, kViewPollInterval);
  return again;
}

}  // namespace tidemark::app::serve
