#pragma once
// The relay's Sink for a view destination: applies each event in-process to every version
// of the view that receives events, in one transaction on a connection of the views' pool.
// The relay's claim gives per-account order; the sink refuses (retry) an event whose
// predecessor is missing, so it waits and shows in the view's lag rather than being lost.
#include <memory>
#include <string>
#include <vector>

#include "pipeline/core/sink.hpp"
#include "pipeline/store/pg/connection_pool.hpp"
#include "pipeline/views/view.hpp"

namespace tidemark::pipeline::views {

class ViewSink : public relay::Sink {
 public:
  ViewSink(const View& view, std::shared_ptr<db::ConnectionPool> database);
  // Applies synchronously and calls `done` before returning.
  void deliver(relay::OutboxEvent event, Completion done) override;

 private:
  relay::DeliveryResult apply(const relay::OutboxEvent& event);

  const View& view_;
  std::string name_;
  std::shared_ptr<db::ConnectionPool> database_;
};

// One ViewSink per view in `names`, keyed by name, sharing one pool of connections to
// `database_url`; creates version 1 of views that have none. ViewError for a name Tidemark
// ships no view of (app/wiring reports it as a configuration error first).
relay::Sinks make_view_sinks(const std::vector<std::string>& names, const std::string& database_url);

}  // namespace tidemark::pipeline::views
