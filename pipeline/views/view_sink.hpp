#pragma once
// The relay's Sink for a view destination: applies each event in-process to every version
// of the view that receives events, in one transaction on a connection of the views' pool.
// The relay's claim gives per-account order; the sink refuses (retry) an event whose
// predecessor is missing, so it waits and shows in the view's lag rather than being lost.
#include <memory>
#include <string>
#include <vector>

#include "pipeline/core/sink.hpp"
#include "pipeline/store/pg/database.hpp"
#include "pipeline/views/view.hpp"

namespace tidemark::pipeline::views {

// What the view sinks of one make_view_sinks call share: the pool of connections and the
// one thread their applies run on (view_sink.cpp).
struct ViewSinkLane;

class ViewSink : public Sink {
 public:
  ViewSink(const View& view, std::shared_ptr<ViewSinkLane> lane);
  // The apply runs on the lane's thread; the caller resumes when it has committed or rolled back.
  boost::asio::awaitable<DeliveryResult> deliver(OutboxEvent event) override;

 private:
  const View& view_;
  std::string name_;
  std::shared_ptr<ViewSinkLane> lane_;
};

// One ViewSink per view in `names`, keyed by name, sharing one pool of connections to
// `database_url` and one apply thread; creates version 1 of views that have none. ViewError
// for a name Tidemark ships no view of (app/wiring reports it as a configuration error
// first). The last sink to go waits for the applies queued before it goes.
Sinks make_view_sinks(const std::vector<std::string>& names, const std::string& database_url);

}  // namespace tidemark::pipeline::views
