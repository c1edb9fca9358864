// GET /v1/outbox and POST /v1/outbox/{id}/retry: the outbox as `tidemark outbox list` and
// `tidemark outbox retry` see it (pipeline/store/outbox.hpp), for the console's dead letters.
#include <boost/json.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include "app/serve/handlers.hpp"
#include "pipeline/store/outbox.hpp"

namespace tidemark::app::serve {

namespace {

constexpr std::int64_t kDefaultOutboxLimit = 100;
constexpr std::int64_t kMaxOutboxLimit = 1000;

boost::json::value text_or_null(const std::string& text) {
  return text.empty() ? boost::json::value(nullptr) : boost::json::value(text);
}

// One event as the API answers it: next_attempt_at while it waits or is dead, delivered_at
// once delivered (null otherwise), as `outbox list` prints them.
boost::json::object event_document(const pipeline::OutboxEntry& entry) {
  return boost::json::object{
      {"id", entry.id},
      {"destination", entry.destination},
      {"idempotency_key", entry.idempotency_key},
      {"partition_key", entry.partition_key ? boost::json::value(*entry.partition_key) : boost::json::value(nullptr)},
      {"sequence", entry.sequence ? boost::json::value(*entry.sequence) : boost::json::value(nullptr)},
      {"status", entry.status},
      {"attempts", entry.attempts},
      {"last_error", text_or_null(entry.last_error)},
      {"created_at", entry.created_at},
      {"next_attempt_at", entry.status == "delivered" ? boost::json::value(nullptr)
                                                      : boost::json::value(entry.next_attempt_at)},
      {"delivered_at", text_or_null(entry.delivered_at)},
  };
}

}  // namespace

HttpResponse list_outbox(ApiContext& context, const HttpRequest& request, const Route&) {
  const auto url = boost::urls::parse_origin_form(request.target);
  pipeline::OutboxFilter filter;
  filter.limit = kDefaultOutboxLimit;
  for (const auto& param : url->params()) {
    if (param.key == "status") {
      if (param.value != "pending" && param.value != "delivered" && param.value != "dead") {
        return error_response(400, "status must be one of pending, delivered, dead");
      }
      filter.status = param.value;
    } else if (param.key == "destination") {
      if (param.value.empty()) return error_response(400, "destination must name a destination");
      filter.destination = param.value;
    } else if (param.key == "limit") {
      const auto parsed = positive_integer(param.value);
      if (!parsed || *parsed > kMaxOutboxLimit) {
        return error_response(400, "limit must be an integer from 1 to " + std::to_string(kMaxOutboxLimit));
      }
      filter.limit = static_cast<std::size_t>(*parsed);
    } else if (param.key == "after_id") {
      const auto parsed = positive_integer(param.value);
      if (!parsed) return error_response(400, "after_id must be a positive integer (an event id, from `next`)");
      filter.after_id = *parsed;
    } else {
      return error_response(400, "unknown query parameter \"" + param.key +
                                     "\" (expected status, destination, limit, after_id)");
    }
  }
  std::vector<pipeline::OutboxEntry> entries;
  context.pool.with_connection("reading the outbox", [&](pqxx::connection& connection) {
    // One event more than the limit tells whether another page follows.
    pipeline::OutboxFilter probe = filter;
    ++probe.limit;
    entries = pipeline::list_outbox(connection, probe);
  });
  const bool more = entries.size() > filter.limit;
  if (more) entries.pop_back();
  boost::json::array events;
  for (const auto& entry : entries) events.push_back(event_document(entry));
  boost::json::value next = nullptr;
  if (more) {
    std::string link = "/v1/outbox?limit=" + std::to_string(filter.limit) +
                       "&after_id=" + std::to_string(entries.back().id);
    for (const auto& [key, value] : {std::pair{"status", filter.status}, std::pair{"destination", filter.destination}}) {
      if (value) link += std::string("&") + key + "=" + boost::urls::encode(*value, boost::urls::unreserved_chars);
    }
    next = link;
  }
  return json_response(200, boost::json::object{{"events", std::move(events)}, {"next", next}});
}

HttpResponse retry_outbox_event(ApiContext& context, const HttpRequest&, const Route& route) {
  const std::string& id = route.segments[2];
  const auto event_id = positive_integer(id);
  if (!event_id) return error_response(404, "no outbox event " + id);
  bool revived = false;
  std::optional<pipeline::OutboxEntry> event;
  context.pool.with_connection("re-driving an outbox event", [&](pqxx::connection& connection) {
    // Once committed, the revival stands: should the read below fail and the pool run this
    // again, the event is pending by then, and the answer is still this revival's 200.
    // The retry wakes serve's relay: it delivers the event at once, not at its next poll.
    if (!revived) revived = pipeline::retry_outbox_event(connection, *event_id, pipeline::RetryScope::kDeadOnly);
    event = pipeline::find_outbox_event(connection, *event_id);
  });
  if (!event) return error_response(404, "no outbox event " + id);
  if (!revived) {
    return error_response(409, "outbox event " + id + " is " + event->status +
                                   ", not dead: only a dead event is retried");
  }
  return json_response(200, event_document(*event));
}

}  // namespace tidemark::app::serve
