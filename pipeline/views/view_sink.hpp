#pragma once
// The relay's Sink for a view destination: applies each event in-process to every version
// of the view that receives events, in one transaction on a connection of the views' pool.
// The relay's claim gives per-account order; the sink refuses (retry) an event whose
// predecessor is missing, so it waits and shows in the view's lag rather than being lost.
// An event that is not a change of the view's entity is dead, with what to do about it.
#include <memory>
#include <string>
#include <vector>

#include "pipeline/core/sink.hpp"
#include "pipeline/store/pg/database.hpp"
#include "pipeline/views/view.hpp"

namespace prometheus {
class Counter;
}

namespace tidemark::metrics {
struct Metrics;
}

namespace tidemark::pipeline::views {

// What the view sinks of one make_view_sinks call share: the pool of connections and the
// one thread their applies run on (view_sink.cpp).
struct ViewSinkLane;

// tidemark_view_events_total{view,result} of one view: each event the sink was handed counts
// once, by what became of it (view_sink.cpp). Null when the metrics are not exported.
struct EventCounts {
  prometheus::Counter* applied = nullptr;    // a version applied it
  prometheus::Counter* duplicate = nullptr;  // every version had applied it already (a redelivery)
  prometheus::Counter* gap = nullptr;        // a version waits for an earlier event: retried
  prometheus::Counter* dead = nullptr;       // refused for good: not a change the view can read
};

class ViewSink : public Sink {
 public:
  ViewSink(const View& view, std::shared_ptr<ViewSinkLane> lane, EventCounts counts);
  // The apply runs on the lane's thread; the caller resumes when it has committed or rolled back.
  boost::asio::awaitable<DeliveryResult> deliver(OutboxEvent event) override;

 private:
  const View& view_;
  std::string name_;
  std::shared_ptr<ViewSinkLane> lane_;
  EventCounts counts_;
};

// One ViewSink per view in `names`, keyed by name, sharing one pool of connections to
// `database_url` and one apply thread; creates version 1 of views that have none. ViewError
// for a name Tidemark ships no view of (app/wiring reports it as a configuration error
// first). The last sink to go waits for the applies queued before it goes. `metrics`, when
// given, counts what became of each event as tidemark_view_events_total{view,result}.
Sinks make_view_sinks(const std::vector<std::string>& names, const std::string& database_url,
                      metrics::Metrics* metrics = nullptr);

}  // namespace tidemark::pipeline::views
