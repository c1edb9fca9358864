#include "pipeline/views/view_sink.hpp"

#include "pipeline/store/pg/database.hpp"
#include "pipeline/views/views.hpp"

namespace tidemark::pipeline::views {

ViewSink::ViewSink(std::string view, std::string database_url)
    : view_(std::move(view)), database_url_(std::move(database_url)) {}

void ViewSink::deliver(relay::OutboxEvent event, Completion done) { done(apply(event)); }

relay::DeliveryResult ViewSink::apply(const relay::OutboxEvent& event) {
  const auto view_event = parse_view_event(event);
  if (!view_event) return relay::DeliveryResult::dead("the payload lacks a field the view " + view_ + " needs");
  std::lock_guard lock(mutex_);
  try {
    if (!connection_) connection_ = db::connect(database_url_);
    pqxx::work txn(*connection_);
    const auto versions = receiving_versions(txn, view_);
    if (versions.empty()) {
      return relay::DeliveryResult::retry("view " + view_ + " has no version to apply to; rebuild one");
    }
    std::string waiting;
    for (const int version : versions) {
      // A version that refuses the event (gap) does not hold the others back: each keeps its
      // own version filter or inbox, so the redelivery is dropped where it already applied.
      if (apply_event(txn, view_, version, *view_event) == ApplyOutcome::kGap) {
        waiting += (waiting.empty() ? "" : ", ") + table_name(view_, version);
      }
    }
    txn.commit();
    if (!waiting.empty()) {
      return relay::DeliveryResult::retry("sequence gap: account " + event.partition_key + " event " +
                                          std::to_string(event.sequence) + " waits for its predecessor in " + waiting);
    }
    return relay::DeliveryResult::delivered();
  } catch (const std::exception& error) {
    // Connection loss, deadlock with a concurrent delivery, a dropped table: the transaction
    // rolled back, so trying again later is safe.
    connection_.reset();
    return relay::DeliveryResult::retry(std::string("view ") + view_ + ": " + error.what());
  }
}

relay::Sinks make_view_sinks(const Config& config, const std::string& database_url) {
  relay::Sinks sinks;
  const std::vector<std::string> names = config.destination_names_of_kind(DestinationKind::kView);
  for (const auto& name : names) {
    if (!is_known_view(name)) {
      throw ConfigError("destination '" + name + "' is of kind view, but tidemark has no such view (" +
                        kAccountBalance + ", " + kDailyTotals + ")");
    }
    sinks.emplace(name, std::make_unique<ViewSink>(name, database_url));
  }
  if (!names.empty()) {
    auto connection = db::connect(database_url);
    ensure_first_versions(*connection, names);
  }
  return sinks;
}

}  // namespace tidemark::pipeline::views
