#include "pipeline/views/view_sink.hpp"

#include "pipeline/views/admin.hpp"
#include "pipeline/views/registry.hpp"

namespace tidemark::pipeline::views {

ViewSink::ViewSink(const View& view, std::shared_ptr<db::ConnectionPool> database)
    : view_(view), name_(view.name()), database_(std::move(database)) {}

void ViewSink::deliver(relay::OutboxEvent event, Completion done) { done(apply(event)); }

relay::DeliveryResult ViewSink::apply(const relay::OutboxEvent& event) {
  const auto view_event = parse_view_event(event);
  if (!view_event) return relay::DeliveryResult::dead("the payload lacks a field the view " + name_ + " needs");
  try {
    // One attempt: the relay's redelivery is the retry.
    relay::DeliveryResult result;
    database_->attempt([&](pqxx::connection& connection) {
      pqxx::work txn(connection);
      const auto versions = receiving_versions(txn, name_);
      if (versions.empty()) {
        result = relay::DeliveryResult::retry("view " + name_ + " has no version to apply to; rebuild one");
        return;
      }
      std::string waiting;
      for (const int version : versions) {
        // A version that refuses the event (gap) does not hold the others back: each keeps its
        // own version filter or inbox, so the redelivery is dropped where it already applied.
        const std::string table = table_name(name_, version);
        if (view_.apply(txn, table, *view_event, Feed::kLive) == ApplyOutcome::kGap) {
          waiting += (waiting.empty() ? "" : ", ") + table;
        }
      }
      txn.commit();
      if (!waiting.empty()) {
        result = relay::DeliveryResult::retry("sequence gap: account " + event.partition_key + " event " +
                                              std::to_string(event.sequence) + " waits for its predecessor in " +
                                              waiting);
        return;
      }
      result = relay::DeliveryResult::delivered();
    });
    return result;
  } catch (const std::exception& error) {
    // Connection loss, deadlock with a concurrent delivery, a dropped table: the transaction
    // rolled back, so trying again later is safe.
    return relay::DeliveryResult::retry(std::string("view ") + name_ + ": " + error.what());
  }
}

relay::Sinks make_view_sinks(const std::vector<std::string>& names, const std::string& database_url) {
  relay::Sinks sinks;
  auto database = std::make_shared<db::ConnectionPool>(database_url);
  for (const auto& name : names) sinks.emplace(name, std::make_unique<ViewSink>(known_view(name), database));
  if (!names.empty()) {
    database->attempt([&](pqxx::connection& connection) { ensure_first_versions(connection, names); });
  }
  return sinks;
}

}  // namespace tidemark::pipeline::views
