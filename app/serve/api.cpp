#include "app/serve/api.hpp"

#include <charconv>
#include <chrono>
#include <ctime>
#include <vector>

#include <openssl/crypto.h>

#include <boost/json.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <spdlog/spdlog.h>

#include "app/serve/front_door.hpp"
#include "app/serve/schedule.hpp"
#include "app/wiring/run_request.hpp"
#include "connectors/http/signature.hpp"
#include "pipeline/store/pg/database.hpp"
#include "pipeline/run/quarantine_release.hpp"
#include "pipeline/core/utf8.hpp"
#include "pipeline/views/views.hpp"
#include "sql/statements.hpp"

namespace tidemark::app::serve {

namespace {

constexpr std::size_t kMaxReasonBytes = 1000;
constexpr std::int64_t kDefaultQuarantineLimit = 100;
constexpr std::int64_t kMaxQuarantineLimit = 1000;
constexpr std::int64_t kDefaultViewWaitMs = 5000;
constexpr std::int64_t kMaxViewWaitMs = 30000;
constexpr std::chrono::milliseconds kViewPollInterval{50};

HttpResponse json_response(int status, const boost::json::value& body) {
  return HttpResponse{status, "application/json", boost::json::serialize(body) + "\n", {}};
}

HttpResponse error_response(int status, const std::string& message) {
  return json_response(status, boost::json::object{{"error", message}});
}

std::optional<std::int64_t> positive_integer(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

// The metric label of a failed signature check.
std::string verification_result(connectors::http::Verification verification) {
  switch (verification) {
    case connectors::http::Verification::kMissingHeader: return "missing_headers";
    case connectors::http::Verification::kBadTimestamp:
    case connectors::http::Verification::kTimestampTooOld:
    case connectors::http::Verification::kTimestampTooNew: return "bad_timestamp";
    default: return "bad_signature";
  }
}

HttpResponse method_not_allowed(const std::string& allowed) {
  HttpResponse response = error_response(405, "method not allowed; use " + allowed);
  response.headers.emplace_back("Allow", allowed);
  return response;
}

}  // namespace

Api::Api(const pipeline::Config& config, RunQueue& runs, ConnectionPool& pool, metrics::Metrics& metrics,
         ApiOptions options)
    : config_(config), runs_(runs), pool_(pool), metrics_(metrics), options_(std::move(options)) {
  for (const char* result : {"accepted", "repeated", "missing_headers", "bad_timestamp", "bad_signature",
                             "bad_request", "unknown_pipeline", "other_pipeline", "too_large", "timeout",
                             "unavailable"}) {
    metrics_.webhook_requests_total.Add({{"result", result}});
  }
}

void Api::count_webhook(const std::string& result) {
  metrics_.webhook_requests_total.Add({{"result", result}}).Increment();
}

HttpResponse Api::reject_webhook(const std::string& result, int status, const std::string& message) {
  count_webhook(result);
  return error_response(status, message);
}

void Api::on_timeout(const HttpRequest& request) {
  if (request.method == "POST" && route_of(request.target).kind == RouteKind::kTrigger) count_webhook("timeout");
}

bool Api::authorized(const HttpRequest& request) const {
  if (!options_.api_token) return true;
  const std::string expected = "Bearer " + *options_.api_token;
  const std::string& given = request.header("authorization");
  return given.size() == expected.size() && CRYPTO_memcmp(given.data(), expected.data(), given.size()) == 0;
}

HttpResponse Api::handle(const HttpRequest& request) {
  const Route route = route_of(request.target);
  if (route.kind == RouteKind::kBadTarget) return error_response(400, "malformed request target");
  const bool trigger = route.kind == RouteKind::kTrigger;
  if (request.body_too_large && !trigger) {
    return error_response(413, "request body over " + std::to_string(kMaxBodyBytes) + " bytes");
  }
  if (route.kind == RouteKind::kNotFound) return error_response(404, "no such route: " + route.path);
  if (request.method != route.method) return method_not_allowed(route.method);
  if (route.needs_token() && !authorized(request)) {
    HttpResponse response = error_response(401, "missing or wrong bearer token (TIDEMARK_API_TOKEN)");
    response.headers.emplace_back("WWW-Authenticate", "Bearer");
    return response;
  }
  const auto& path = route.segments;
  try {
    switch (route.kind) {
      case RouteKind::kTrigger: return trigger_run(request, path[2]);
      case RouteKind::kHealth: return json_response(200, boost::json::object{{"status", "ok"}});
      case RouteKind::kReady: return ready();
      case RouteKind::kMetrics:
        export_view_lag();
        return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", metrics_.serialize(), {}};
      case RouteKind::kRun: return run_status(path[2]);
      case RouteKind::kPipelines: return pipelines();
      case RouteKind::kQuarantineList: return quarantine(request);
      case RouteKind::kQuarantineEntry: return quarantine_entry(path[2]);
      case RouteKind::kRelease: return release(path[2]);
      case RouteKind::kAccountView: return account_view(request, path[2], path[4]);
      case RouteKind::kBadTarget:
      case RouteKind::kNotFound: break;
    }
    return error_response(404, "no such route: " + route.path);
  } catch (const pipeline::db::RetriesExhausted& error) {
    spdlog::warn("{} {}: {}", request.method, request.target, error.what());
    if (trigger) count_webhook("unavailable");
    return error_response(503, "database unavailable; try again later");
  } catch (const std::exception& error) {
    spdlog::error("{} {}: {}", request.method, request.target, error.what());
    if (trigger) count_webhook("unavailable");
    return error_response(500, "internal error; see the server log");
  }
}

HttpResponse Api::trigger_run(const HttpRequest& request, const std::string& pipeline) {
  if (request.body_too_large) {
    return reject_webhook("too_large", 413, "request body over " + std::to_string(kMaxBodyBytes) + " bytes");
  }
  if (!options_.webhook_key) {
    return reject_webhook("bad_signature", 401, "run triggers are disabled: TIDEMARK_WEBHOOK_SECRET is not set");
  }
  const connectors::http::SignedHeaders headers{request.header("webhook-id"), request.header("webhook-timestamp"),
                                                request.header("webhook-signature")};
  if (!headers.id.empty() && !valid_webhook_id(headers.id)) {
    return reject_webhook("bad_request", 400,
                          "webhook-id must be 1 to " + std::to_string(kMaxWebhookIdBytes) + " bytes of printable ASCII");
  }
  const auto verification = connectors::http::verify(*options_.webhook_key, headers, request.body, std::time(nullptr));
  if (verification != connectors::http::Verification::kValid) {
    return reject_webhook(verification_result(verification), 401, std::string(connectors::http::to_string(verification)));
  }

  boost::system::error_code parse_error;
  const boost::json::value body = boost::json::parse(request.body, parse_error);
  if (parse_error || !body.is_object()) {
    return reject_webhook("bad_request", 400, "the body must be a JSON object: {\"mode\":\"resume\"|\"replay\",\"reason\":\"…\"}");
  }
  TriggerRequest trigger{pipeline, "webhook", false, std::nullopt, std::string(headers.id)};
  for (const auto& [key, value] : body.as_object()) {
    if (key == "mode" && value.is_string() && (value.as_string() == "resume" || value.as_string() == "replay")) {
      trigger.replay = value.as_string() == "replay";
    } else if (key == "reason" && value.is_string() && value.as_string().size() <= kMaxReasonBytes) {
      trigger.reason = std::string(value.as_string());
    } else if (key == "mode" || key == "reason") {
      return reject_webhook("bad_request", 400,
                            key == "mode" ? "mode must be \"resume\" or \"replay\""
                                          : "reason must be a string of at most " + std::to_string(kMaxReasonBytes) + " bytes");
    } else {
      return reject_webhook("bad_request", 400, "unknown field \"" + std::string(key) + "\" (expected mode, reason)");
    }
  }
  // The signature does not cover the path: a webhook-id stays with the path that first saw
  // it, so that a captured request cannot be replayed to another pipeline.
  const auto other_pipeline = [&](const std::string& bound) {
    return reject_webhook("other_pipeline", 409,
                          "webhook-id " + trigger.request_id.value() + " was sent to pipeline \"" + bound + "\" first");
  };
  if (!runs_.has_pipeline(pipeline)) {
    const std::string bound = runs_.bind_request(*trigger.request_id, pipeline);
    if (bound != pipeline) return other_pipeline(bound);
    return reject_webhook("unknown_pipeline", 404, "no pipeline named \"" + pipeline + "\" in the config");
  }
  const auto result = runs_.trigger(trigger);
  if (!result) return reject_webhook("unavailable", 503, "tidemark serve is shutting down");
  if (result->other_pipeline) return other_pipeline(*result->other_pipeline);
  count_webhook(result->repeated ? "repeated" : "accepted");
  HttpResponse response =
      json_response(202, boost::json::object{{"run_id", result->run_id}, {"status", result->status}});
  response.headers.emplace_back("Location", "/v1/runs/" + std::to_string(result->run_id));
  return response;
}

HttpResponse Api::run_status(const std::string& id) {
  const auto run_id = positive_integer(id);
  if (!run_id) return error_response(404, "no run " + id);
  std::optional<std::string> json;
  pool_.with_connection("reading a run", [&](pqxx::connection& connection) {
    pqxx::nontransaction txn(connection);
    const auto rows = txn.exec_params(std::string(sql::kServeRunStatus), *run_id);
    if (!rows.empty()) json = rows[0][0].c_str();
  });
  if (!json) return error_response(404, "no run " + id);
  return HttpResponse{200, "application/json", *json + "\n", {}};
}

HttpResponse Api::pipelines() {
  boost::json::array list;
  pool_.with_connection("reading pipelines", [&](pqxx::connection& connection) {
    pqxx::nontransaction txn(connection);
    list.clear();
    for (const auto& [name, pipeline] : config_.pipelines) {
      boost::json::object entry{{"name", name},
                                {"source", {{"kind", to_string(pipeline.source.kind)}, {"path", pipeline.source.path},
                                            {"format", to_string(pipeline.source.format)}}},
                                {"batch_size", pipeline.batch_size}};
      entry["schedule"] = pipeline.schedule ? boost::json::value(Schedule(name, *pipeline.schedule).describe())
                                            : boost::json::value(nullptr);
      boost::json::array destinations;
      for (const auto& destination : pipeline.destination_names()) destinations.emplace_back(destination);
      entry["destinations"] = std::move(destinations);
      const RunQueue::PipelineState state = runs_.state(name);
      entry["running"] = state.running;
      entry["queued_run"] = state.queued_run ? boost::json::value(*state.queued_run) : boost::json::value(nullptr);
      const auto stored = boost::json::parse(txn.exec_params1(std::string(sql::kServePipelineStatus), name)[0].c_str());
      for (const auto& [key, value] : stored.as_object()) entry[key] = value;
      list.push_back(std::move(entry));
    }
  });
  return json_response(200, list);
}

HttpResponse Api::quarantine(const HttpRequest& request) {
  const auto url = boost::urls::parse_origin_form(request.target);
  std::string pipeline;
  std::int64_t limit = kDefaultQuarantineLimit;
  std::int64_t after = 0;
  for (const auto& param : url->params()) {
    if (param.key == "pipeline") {
      pipeline = param.value;
    } else if (param.key == "limit") {
      const auto parsed = positive_integer(param.value);
      if (!parsed || *parsed > kMaxQuarantineLimit) {
        return error_response(400, "limit must be an integer from 1 to " + std::to_string(kMaxQuarantineLimit));
      }
      limit = *parsed;
    } else if (param.key == "after") {
      const auto parsed = positive_integer(param.value);
      if (!parsed) return error_response(400, "after must be a positive integer (an entry id, from `next`)");
      after = *parsed;
    } else {
      return error_response(400, "unknown query parameter \"" + param.key + "\" (expected pipeline, limit, after)");
    }
  }
  std::string entries;  // the serialised entries, comma-separated
  std::int64_t listed = 0;
  std::int64_t last_id = 0;
  bool more = false;
  pool_.with_connection("reading the quarantine", [&](pqxx::connection& connection) {
    pqxx::nontransaction txn(connection);
    entries.clear();
    listed = 0;
    more = false;
    // One row more than the limit tells whether another page follows.
    const auto rows = txn.exec_params(std::string(sql::kServeQuarantineList), pipeline, limit + 1, after);
    for (const auto& row : rows) {
      if (listed == limit || (listed > 0 && entries.size() >= kListPageBytes)) {
        more = true;
        break;
      }
      boost::json::object entry = boost::json::parse(row[1].c_str()).as_object();
      std::string raw(entry["raw"].as_string());
      if (raw.size() > kListRawBytes) {
        // Never inside a UTF-8 sequence: back to the start of the one the cut would split.
        raw.resize(pipeline::utf8_prefix_length(raw, kListRawBytes));
      }
      entry["raw"] = raw;
      entry["raw_truncated"] = row[2].as<std::size_t>() > raw.size();
      if (listed++ > 0) entries += ',';
      entries += boost::json::serialize(entry);
      last_id = row[0].as<std::int64_t>();
    }
  });
  boost::json::value next = nullptr;
  if (more) {
    std::string link = "/v1/quarantine?limit=" + std::to_string(limit) + "&after=" + std::to_string(last_id);
    if (!pipeline.empty()) link += "&pipeline=" + boost::urls::encode(pipeline, boost::urls::unreserved_chars);
    next = link;
  }
  return HttpResponse{200, "application/json",
                      "{\"entries\":[" + entries + "],\"next\":" + boost::json::serialize(next) + "}\n", {}};
}

HttpResponse Api::quarantine_entry(const std::string& id) {
  const auto entry_id = positive_integer(id);
  if (!entry_id) return error_response(404, "no quarantine entry " + id);
  std::optional<std::string> json;
  pool_.with_connection("reading a quarantine entry", [&](pqxx::connection& connection) {
    pqxx::nontransaction txn(connection);
    const auto rows = txn.exec_params(std::string(sql::kServeQuarantineShow), *entry_id);
    if (!rows.empty()) json = rows[0][0].c_str();
  });
  if (!json) return error_response(404, "no quarantine entry " + id);
  return HttpResponse{200, "application/json", *json + "\n", {}};
}

HttpResponse Api::release(const std::string& id) {
  const auto entry_id = positive_integer(id);
  if (!entry_id) return error_response(404, "no quarantine entry " + id);
  std::optional<std::string> pipeline;
  bool released = false;
  pool_.with_connection("reading a quarantine entry", [&](pqxx::connection& connection) {
    pqxx::nontransaction txn(connection);
    const auto rows = txn.exec_params(std::string(sql::kServeQuarantineEntry), *entry_id);
    if (rows.empty()) return;
    pipeline = rows[0][0].c_str();
    released = rows[0][1].as<bool>();
  });
  if (!pipeline) return error_response(404, "no quarantine entry " + id);
  if (released) return error_response(409, "quarantine entry " + id + " was released already");
  const std::vector<std::string> destinations = config_.destination_names(*pipeline);
  pipeline::ReleaseResult result;
  try {
    result = pipeline::release_quarantined(pool_.url(), *entry_id, destinations, "api", quarantine_decoder());
  } catch (const std::invalid_argument& error) {
    return error_response(409, error.what());  // released by someone else meanwhile
  }
  const std::string outcome(pipeline::to_string(result.outcome));
  // The release is a one-record batch in the ledger: the exposed counts follow it.
  pipeline::OutcomeCounts counts;
  counts[result.outcome] = 1;
  runs_.count_committed_batch(*pipeline, counts);
  return json_response(200, boost::json::object{{"quarantine_id", *entry_id}, {"run_id", result.run_id}, {"outcome", outcome}});
}

HttpResponse Api::account_view(const HttpRequest& request, const std::string& view, const std::string& account) {
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
  // server waits on a timer, so slow waits never hold a worker thread.
  std::optional<pipeline::views::AccountBalance> reading;
  pool_.with_connection("reading account_balance", [&](pqxx::connection& connection) {
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

void Api::export_view_lag() {
  const std::vector<std::string> views = config_.destination_names_of_kind(pipeline::DestinationKind::kView);
  if (views.empty()) return;
  try {
    pool_.with_connection("measuring view lag", [&](pqxx::connection& connection) {
      for (const auto& [view, health] : pipeline::views::view_health(connection, views)) {
        metrics_.view_lag_seconds.Add({{"view", view}}).Set(health.lag_seconds);
        metrics_.view_dead_events.Add({{"view", view}}).Set(static_cast<double>(health.dead));
      }
    });
  } catch (const std::exception& error) {
    // A scrape still answers with everything else; the gauge keeps its last value.
    spdlog::warn("could not measure view lag: {}", error.what());
  }
}

HttpResponse Api::ready() {
  try {
    pool_.with_connection("checking the database", [](pqxx::connection& connection) {
      pqxx::nontransaction txn(connection);
      txn.exec("SELECT 1");
    });
  } catch (const std::exception& error) {
    return error_response(503, std::string("database unreachable: ") + error.what());
  }
  if (options_.not_ready) {
    if (const std::string problem = options_.not_ready(); !problem.empty()) return error_response(503, problem);
  }
  return json_response(200, boost::json::object{{"status", "ready"}});
}

}  // namespace tidemark::app::serve
