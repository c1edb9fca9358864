#pragma once
// The relay's Sink for a view destination: applies each event in-process to every version
// of the view that receives events, in one transaction on the sink's own connection. The
// relay's claim gives per-account order; the sink refuses (retry) an event whose
// predecessor is missing, so it waits and shows in the view's lag rather than being lost.
#include <memory>
#include <mutex>
#include <string>

#include <pqxx/pqxx>

#include "app/config/config.hpp"
#include "pipeline/relay/relay.hpp"
#include "pipeline/core/sink.hpp"

namespace tidemark::pipeline::views {

class ViewSink : public relay::Sink {
 public:
  ViewSink(std::string view, std::string database_url);
  // Applies synchronously and calls `done` before returning.
  void deliver(relay::OutboxEvent event, Completion done) override;

 private:
  relay::DeliveryResult apply(const relay::OutboxEvent& event);

  std::string view_;
  std::string database_url_;
  std::mutex mutex_;  // one transaction at a time on the connection
  std::unique_ptr<pqxx::connection> connection_;
};

// One ViewSink per `kind: view` destination of `config`, keyed by destination name (the
// view's name); creates version 1 of views that have none. ConfigError for a view name
// Tidemark does not ship.
relay::Sinks make_view_sinks(const Config& config, const std::string& database_url);

}  // namespace tidemark::pipeline::views
