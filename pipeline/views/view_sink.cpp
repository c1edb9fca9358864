#include "pipeline/views/view_sink.hpp"

#include <functional>
#include <utility>
#include <variant>

#include <boost/asio/thread_pool.hpp>

#include "metrics/metrics.hpp"
#include "pipeline/async/offload.hpp"
#include "pipeline/views/admin.hpp"
#include "pipeline/views/entity_event.hpp"
#include "pipeline/views/registry.hpp"

namespace tidemark::pipeline::views {

struct ViewSinkLane {
  explicit ViewSinkLane(const std::string& database_url) : database(database_url) {}
  // Every apply queued runs before the pool it uses goes.
  ~ViewSinkLane() { apply_thread.join(); }
  ViewSinkLane(const ViewSinkLane&) = delete;
  ViewSinkLane& operator=(const ViewSinkLane&) = delete;

  db::Database database;
  // One thread for the applies of every view sink: they overlap the relay's own work, and
  // one apply (one connection of the pool) runs at a time, as when the relay applied them
  // itself.
  boost::asio::thread_pool apply_thread{1};
};

namespace {

void count(prometheus::Counter* counter) {
  if (counter != nullptr) counter->Increment();
}

// The fields of `event` that `view` reads, or why it can never apply the event (which is then
// dead: no retry changes a payload).
std::variant<ViewEvent, std::string> read_event(const View& view, const std::string& name,
                                                const OutboxEvent& event) {
  const auto entity_event = parse_entity_event(event);
  if (!entity_event) {
    return "view " + name + ": event " + event.idempotency_key +
           " is not an entity event (its payload has neither an entity, a key and a revision nor the built-in "
           "entity's transaction_id and source_revision): the view cannot apply it; if it should count, fix "
           "what wrote it and rebuild the view";
  }
  if (entity_event->entity != view.entity()) {
    return "view " + name + " reads entity " + std::string(view.entity()) + "; event " + event.idempotency_key +
           " is of entity " + entity_event->entity +
           ": fix the config, then `tidemark outbox retry` or rebuild the view";
  }
  if (auto view_event = to_view_event(*entity_event)) return std::move(*view_event);
  return "the payload of event " + event.idempotency_key + " lacks a field the view " + name + " needs";
}

DeliveryResult apply(const View& view, const std::string& name, db::Database& database, const OutboxEvent& event,
                     const EventCounts& counts) {
  auto read = read_event(view, name, event);
  if (auto* reason = std::get_if<std::string>(&read)) {
    count(counts.dead);
    return DeliveryResult::dead(std::move(*reason));
  }
  const auto& view_event = std::get<ViewEvent>(read);
  try {
    // One attempt: the relay's redelivery is the retry.
    DeliveryResult result;
    prometheus::Counter* counted = nullptr;  // once committed: what became of the event
    database.attempt([&](pqxx::connection& connection) {
      counted = nullptr;
      pqxx::work txn(connection);
      const auto versions = receiving_versions(txn, name);
      if (versions.empty()) {
        result = DeliveryResult::retry("view " + name + " has no version to apply to; rebuild one");
        return;
      }
      bool applied = false;
      std::string waiting;
      for (const int version : versions) {
        // A version that refuses the event (gap) does not hold the others back: each keeps its
        // own version filter or inbox, so the redelivery is dropped where it already applied.
        const std::string table = table_name(name, version);
        const ApplyOutcome outcome = view.apply(txn, table, view_event, Feed::kLive);
        if (outcome == ApplyOutcome::kGap) waiting += (waiting.empty() ? "" : ", ") + table;
        if (outcome == ApplyOutcome::kApplied) applied = true;
      }
      txn.commit();
      if (!waiting.empty()) {
        counted = counts.gap;
        result = DeliveryResult::retry("sequence gap: account " + event.partition_key + " event " +
                                              std::to_string(event.sequence) + " waits for its predecessor in " +
                                              waiting);
        return;
      }
      counted = applied ? counts.applied : counts.duplicate;
      result = DeliveryResult::delivered();
    });
    count(counted);
    return result;
  } catch (const std::exception& error) {
    // Connection loss, deadlock with a concurrent delivery, a dropped table: the transaction
    // rolled back, so trying again later is safe.
    return DeliveryResult::retry(std::string("view ") + name + ": " + error.what());
  }
}

// Every series of `view` exists from the start, so that increase() sees the first dead event
// as a change from 0 rather than as a new series.
EventCounts event_counts(metrics::Metrics* metrics, const std::string& view) {
  if (metrics == nullptr) return {};
  const auto series = [&](const char* result) {
    return &metrics->view_events_total.Add({{"view", view}, {"result", result}});
  };
  return {.applied = series("applied"), .duplicate = series("duplicate"), .gap = series("gap"), .dead = series("dead")};
}

}  // namespace

ViewSink::ViewSink(const View& view, std::shared_ptr<ViewSinkLane> lane, EventCounts counts)
    : view_(view), name_(view.name()), lane_(std::move(lane)), counts_(counts) {}

boost::asio::awaitable<DeliveryResult> ViewSink::deliver(OutboxEvent event) {
  DeliveryResult result;
  const std::function<void()> applying = [this, &event, &result] {
    result = apply(view_, name_, lane_->database, event, counts_);
  };
  co_await async::offload(&lane_->apply_thread, &applying);
  co_return result;
}

Sinks make_view_sinks(const std::vector<std::string>& names, const std::string& database_url,
                      metrics::Metrics* metrics) {
  Sinks sinks;
  auto lane = std::make_shared<ViewSinkLane>(database_url);
  for (const auto& name : names) {
    const View& view = known_view(name);
    sinks.emplace(name, std::make_unique<ViewSink>(view, lane, event_counts(metrics, name)));
  }
  if (!names.empty()) {
    lane->database.attempt([&](pqxx::connection& connection) { ensure_first_versions(connection, names); });
  }
  return sinks;
}

}  // namespace tidemark::pipeline::views
