// Run triggers (POST /v1/pipelines/{name}/runs), GET /v1/runs/{id}, GET /v1/runs,
// GET /v1/pipelines, GET /v1/pipelines/{name}.
#include <ctime>
#include <type_traits>
#include <variant>
#include <vector>

#include <boost/json.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <spdlog/spdlog.h>

#include "app/serve/api.hpp"
#include "app/serve/handlers.hpp"
#include "app/serve/schedule.hpp"
#include "app/status/status.hpp"
#include "connectors/http/signature.hpp"
#include "pipeline/core/json_value.hpp"
#include "pipeline/core/validate.hpp"
#include "pipeline/store/pg/row.hpp"
#include "sql/statements.hpp"

namespace tidemark::app::serve {

namespace {

constexpr std::size_t kMaxReasonBytes = 1000;

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

// Logged at warn as well as counted: the operator sees why a sender's triggers fail. The
// message is what the client is answered, never a secret or a signature; it may quote what
// the client sent (a JSON key, a pipeline name), so it is logged as a JSON string: a newline
// in it cannot start a forged line of the text log.
HttpResponse reject_webhook(ApiContext& context, const std::string& result, int status, const std::string& message) {
  count_webhook(context.metrics, result);
  spdlog::warn("run trigger rejected: {} {}: {}", status, result, pipeline::json_quoted(message));
  return error_response(status, message);
}

HttpResponse accept_trigger(ApiContext& context, const HttpRequest& request, const std::string& pipeline) {
  if (request.body_too_large) {
    return reject_webhook(context, "too_large", 413, "request body over " + std::to_string(kMaxBodyBytes) + " bytes");
  }
  if (!context.options.webhook_key) {
    return reject_webhook(context, "bad_signature", 401,
                          "run triggers are disabled: TIDEMARK_WEBHOOK_SECRET is not set");
  }
  const connectors::http::SignedHeaders headers{request.header("webhook-id"), request.header("webhook-timestamp"),
                                                request.header("webhook-signature")};
  if (!headers.id.empty() && !valid_webhook_id(headers.id)) {
    return reject_webhook(
        context, "bad_request", 400,
        "webhook-id must be 1 to " + std::to_string(kMaxWebhookIdBytes) + " bytes of printable ASCII");
  }
  const auto verification =
      connectors::http::verify(*context.options.webhook_key, headers, request.body, std::time(nullptr));
  if (verification != connectors::http::Verification::kValid) {
    return reject_webhook(context, verification_result(verification), 401,
                          std::string(connectors::http::to_string(verification)));
  }

  boost::system::error_code parse_error;
  const boost::json::value body = boost::json::parse(request.body, parse_error);
  if (parse_error || !body.is_object()) {
    return reject_webhook(context, "bad_request", 400,
                          "the body must be a JSON object: {\"mode\":\"resume\"|\"replay\",\"reason\":\"…\"}");
  }
  TriggerRequest trigger{pipeline, app::config::Trigger::kWebhook, false, std::nullopt, std::string(headers.id)};
  for (const auto& [key, value] : body.as_object()) {
    if (key == "mode" && value.is_string() && (value.as_string() == "resume" || value.as_string() == "replay")) {
      trigger.replay = value.as_string() == "replay";
    } else if (key == "reason" && value.is_string() && value.as_string().size() <= kMaxReasonBytes) {
      trigger.reason = std::string(value.as_string());
    } else if (key == "mode" || key == "reason") {
      return reject_webhook(context, "bad_request", 400,
                            key == "mode" ? "mode must be \"resume\" or \"replay\""
                                          : "reason must be a string of at most " + std::to_string(kMaxReasonBytes) +
                                                " bytes");
    } else {
      return reject_webhook(context, "bad_request", 400,
                            "unknown field \"" + std::string(key) + "\" (expected mode, reason)");
    }
  }
  // The signature does not cover the path: a webhook-id stays with the path that first saw
  // it, so that a captured request cannot be replayed to another pipeline.
  const auto other_pipeline = [&](const std::string& bound) {
    return reject_webhook(context, "other_pipeline", 409,
                          "webhook-id " + trigger.request_id.value() + " was sent to pipeline \"" + bound + "\" first");
  };
  if (!context.runs.has_pipeline(pipeline)) {
    const std::string bound = context.runs.bind_request(*trigger.request_id, pipeline);
    if (bound != pipeline) return other_pipeline(bound);
    return reject_webhook(context, "unknown_pipeline", 404, "no pipeline named \"" + pipeline + "\" in the config");
  }
  if (const auto& source = context.config.pipelines.at(pipeline).source; source.capabilities().partitioned) {
    return reject_webhook(context, "streamed", 409,
                          "pipeline \"" + pipeline + "\" reads a " + std::string(source.kind()) +
                              " source: serve consumes its partitions continuously, so a run cannot be triggered");
  }
  const auto result = context.runs.trigger(trigger);
  if (!result) return reject_webhook(context, "unavailable", 503, "tidemark serve is shutting down");
  if (result->other_pipeline) return other_pipeline(*result->other_pipeline);
  count_webhook(context.metrics, result->repeated ? "repeated" : "accepted");
  HttpResponse response =
      json_response(202, boost::json::object{{"run_id", result->run_id}, {"status", result->status}});
  response.headers.emplace_back("Location", "/v1/runs/" + std::to_string(result->run_id));
  return response;
}

}  // namespace

void add_webhook_series(metrics::Metrics& metrics) {
  for (const char* result : {"accepted", "repeated", "missing_headers", "bad_timestamp", "bad_signature",
                             "bad_request", "unknown_pipeline", "other_pipeline", "streamed", "too_large", "timeout",
                             "unavailable"}) {
    metrics.webhook_requests_total.Add({{"result", result}});
  }
}

void count_webhook(metrics::Metrics& metrics, const std::string& result) {
  metrics.webhook_requests_total.Add({{"result", result}}).Increment();
}

HttpResponse trigger_run(ApiContext& context, const HttpRequest& request, const Route& route) {
  try {
    return accept_trigger(context, request, route.segments[2]);
  } catch (const std::exception&) {
    count_webhook(context.metrics, "unavailable");  // the router answers 503 or 500
    throw;
  }
}

HttpResponse run_status(ApiContext& context, const HttpRequest&, const Route& route) {
  HttpResponse response = stored_document(context, route.segments[2], sql::kServeRunStatus, "reading a run", "no run");
  if (response.status != 200) return response;
  boost::json::object run = boost::json::parse(response.body).as_object();
  status::redact_urls_shown(run);
  return json_response(200, run);
}

namespace {

// What a pipeline reads: its kind, then what its kind shows (a postgres or http source has no path).
boost::json::object source_document(const app::config::SourceConfig& source) {
  boost::json::object document{{"kind", source.kind()}};
  for (const auto& [key, shown] : source.shown()) {
    std::visit(
        [&document, &key = key](const auto& value) {
          if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::vector<std::string>>) {
            boost::json::array list;
            for (const auto& item : value) list.emplace_back(item);
            document[key] = std::move(list);
          } else {
            document[key] = value;
          }
        },
        shown);
  }
  status::redact_urls_shown(document);  // an http source's credentials and api_key stay in the config
  return document;
}

}  // namespace

HttpResponse list_pipelines(ApiContext& context, const HttpRequest&, const Route&) {
  boost::json::array list;
  context.pool.with_connection("reading pipelines", [&](pqxx::connection& connection) {
    pqxx::nontransaction txn(connection);
    list.clear();
    for (const auto& [name, pipeline] : context.config.pipelines) {
      boost::json::object entry{{"name", name},
                                {"source", source_document(pipeline.source)},
                                {"batch_size", pipeline.batch_size}};
      entry["schedule"] = pipeline.schedule ? boost::json::value(Schedule(name, *pipeline.schedule).describe())
                                            : boost::json::value(nullptr);
      boost::json::array destinations;
      for (const auto& destination : pipeline.destination_names()) destinations.emplace_back(destination);
      entry["destinations"] = std::move(destinations);
      const RunQueue::PipelineState state = context.runs.state(name);
      entry["running"] = state.running;
      entry["queued_run"] = state.queued_run ? boost::json::value(*state.queued_run) : boost::json::value(nullptr);
      // When serve's schedule triggers it next (null without a schedule, or before its loop began).
      entry["next_run_at"] =
          state.next_scheduled
              ? boost::json::value(pipeline::format_timestamp(
                    std::chrono::duration_cast<std::chrono::microseconds>(state.next_scheduled->time_since_epoch()).count()))
              : boost::json::value(nullptr);
      const auto stored = boost::json::parse(
          pipeline::db::Row(txn.exec_params1(std::string(sql::kServePipelineStatus), name)).text("document"));
      for (const auto& [key, value] : stored.as_object()) entry[key] = value;
      for (auto& checkpoint : entry["checkpoints"].as_array()) status::redact_urls_shown(checkpoint.as_object());
      list.push_back(std::move(entry));
    }
  });
  return json_response(200, list);
}

HttpResponse list_runs(ApiContext& context, const HttpRequest& request, const Route&) {
  const auto url = boost::urls::parse_origin_form(request.target);
  status::RunFilter filter;
  for (const auto& param : url->params()) {
    if (param.key == "pipeline") {
      filter.pipeline = param.value;
    } else if (param.key == "status") {
      if (!status::is_run_status(param.value)) {
        return error_response(400, "status must be one of queued, running, succeeded, stopped, failed");
      }
      filter.status = param.value;
    } else if (param.key == "limit") {
      const auto parsed = positive_integer(param.value);
      if (!parsed || *parsed > status::kMaxRunLimit) {
        return error_response(400, "limit must be an integer from 1 to " + std::to_string(status::kMaxRunLimit));
      }
      filter.limit = *parsed;
    } else if (param.key == "before") {
      const auto parsed = positive_integer(param.value);
      if (!parsed) return error_response(400, "before must be a positive integer (a run id, from `next`)");
      filter.before = *parsed;
    } else {
      return error_response(400, "unknown query parameter \"" + param.key +
                                     "\" (expected pipeline, status, limit, before)");
    }
  }
  boost::json::array runs;
  bool more = false;
  context.pool.with_connection("reading runs", [&](pqxx::connection& connection) {
    // One run more than the limit tells whether another page follows.
    status::RunFilter probe = filter;
    ++probe.limit;
    runs = status::list_runs(connection, probe);
    more = runs.size() > static_cast<std::size_t>(filter.limit);
    if (more) runs.pop_back();
  });
  boost::json::value next = nullptr;
  if (more) {
    std::string link = "/v1/runs?limit=" + std::to_string(filter.limit) +
                       "&before=" + std::to_string(runs.back().as_object().at("run_id").to_number<std::int64_t>());
    for (const auto& [key, value] : {std::pair{"pipeline", filter.pipeline}, std::pair{"status", filter.status}}) {
      if (!value.empty()) link += std::string("&") + key + "=" + boost::urls::encode(value, boost::urls::unreserved_chars);
    }
    next = link;
  }
  return json_response(200, boost::json::object{{"runs", std::move(runs)}, {"next", next}});
}

HttpResponse show_pipeline(ApiContext& context, const HttpRequest&, const Route& route) {
  const std::string& name = route.segments[2];
  std::optional<boost::json::object> found;
  context.pool.with_connection("reading a pipeline's status", [&](pqxx::connection& connection) {
    found = status::pipeline_status(connection, &context.config, name);
  });
  if (!found) return error_response(404, "no pipeline named \"" + name + "\" in the config or the database");
  return json_response(200, *found);
}

}  // namespace tidemark::app::serve
