#include "pipeline/views/view_sink.hpp"

#include <functional>
#include <utility>

#include <boost/asio/thread_pool.hpp>

#include "pipeline/async/offload.hpp"
#include "pipeline/views/admin.hpp"
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

DeliveryResult apply(const View& view, const std::string& name, db::Database& database,
                    const OutboxEvent& event) {
  const auto view_event = parse_view_event(event);
  if (!view_event) return DeliveryResult::dead("the payload lacks a field the view " + name + " needs");
  try {
    // One attempt: the relay's redelivery is the retry.
    DeliveryResult result;
    database.attempt([&](pqxx::connection& connection) {
      pqxx::work txn(connection);
      const auto versions = receiving_versions(txn, name);
      if (versions.empty()) {
        result = DeliveryResult::retry("view " + name + " has no version to apply to; rebuild one");
        return;
      }
      std::string waiting;
      for (const int version : versions) {
        // A version that refuses the event (gap) does not hold the others back: each keeps its
        // own version filter or inbox, so the redelivery is dropped where it already applied.
        const std::string table = table_name(name, version);
        if (view.apply(txn, table, *view_event, Feed::kLive) == ApplyOutcome::kGap) {
          waiting += (waiting.empty() ? "" : ", ") + table;
        }
      }
      txn.commit();
      if (!waiting.empty()) {
        result = DeliveryResult::retry("sequence gap: account " + event.partition_key + " event " +
                                              std::to_string(event.sequence) + " waits for its predecessor in " +
                                              waiting);
        return;
      }
      result = DeliveryResult::delivered();
    });
    return result;
  } catch (const std::exception& error) {
    // Connection loss, deadlock with a concurrent delivery, a dropped table: the transaction
    // rolled back, so trying again later is safe.
    return DeliveryResult::retry(std::string("view ") + name + ": " + error.what());
  }
}

}  // namespace

ViewSink::ViewSink(const View& view, std::shared_ptr<ViewSinkLane> lane)
    : view_(view), name_(view.name()), lane_(std::move(lane)) {}

boost::asio::awaitable<DeliveryResult> ViewSink::deliver(OutboxEvent event) {
  DeliveryResult result;
  const std::function<void()> applying = [this, &event, &result] {
    result = apply(view_, name_, lane_->database, event);
  };
  co_await async::offload(&lane_->apply_thread, &applying);
  co_return result;
}

Sinks make_view_sinks(const std::vector<std::string>& names, const std::string& database_url) {
  Sinks sinks;
  auto lane = std::make_shared<ViewSinkLane>(database_url);
  for (const auto& name : names) sinks.emplace(name, std::make_unique<ViewSink>(known_view(name), lane));
  if (!names.empty()) {
    lane->database.attempt([&](pqxx::connection& connection) { ensure_first_versions(connection, names); });
  }
  return sinks;
}

}  // namespace tidemark::pipeline::views
