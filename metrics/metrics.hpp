#pragma once
// Every metric family of docs/operations.md "Metrics", declared together in one registry and
// handed to the code that counts (STYLE habit 8). GET /metrics serializes the registry.
#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace tidemark::metrics {

struct Metrics {
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  std::shared_ptr<prometheus::Registry> registry;

  // Batch pipeline.
  prometheus::Family<prometheus::Counter>& records_total;                 // {pipeline, entity, outcome}
  prometheus::Family<prometheus::Counter>& batches_total;                 // {pipeline, status}
  prometheus::Family<prometheus::Histogram>& batch_duration_seconds;      // {pipeline}
  prometheus::Family<prometheus::Counter>& runs_total;                    // {pipeline, trigger, status}
  prometheus::Family<prometheus::Gauge>& checkpoint_timestamp_seconds;    // {pipeline}
  // Files a run found changed since an earlier run read them, and read again from their start.
  prometheus::Family<prometheus::Counter>& source_files_reread_total;     // {pipeline}
  // Outbox relay.
  prometheus::Family<prometheus::Gauge>& outbox_pending;                  // {destination}
  prometheus::Family<prometheus::Counter>& outbox_deliveries_total;       // {destination, result}
  prometheus::Family<prometheus::Histogram>& outbox_delivery_duration_seconds;  // {destination}
  // PubAcks of a NATS destination's stream saying it already held the message (delivered once).
  prometheus::Family<prometheus::Counter>& nats_duplicates_total;         // {destination}
  // serve's consumers of nats pipelines (docs/scale-out.md "serve"): the partitions this
  // process owns, and the runs of a partition that its stream's state refused (a gap).
  prometheus::Family<prometheus::Gauge>& nats_partitions_owned;           // {pipeline}
  prometheus::Family<prometheus::Counter>& nats_partitions_refused_total; // {pipeline, partition}
  // Serve API and views.
  prometheus::Family<prometheus::Counter>& webhook_requests_total;        // {result}
  prometheus::Family<prometheus::Gauge>& view_lag_seconds;                // {view}
  prometheus::Family<prometheus::Gauge>& view_dead_events;                // {view}
  // What became of each event a view sink was handed (applied, duplicate, gap, dead).
  prometheus::Family<prometheus::Counter>& view_events_total;             // {view, result}
  // Supervision.
  prometheus::Family<prometheus::Counter>& component_restarts_total;      // {component}
  // Retention (docs/retention.md).
  prometheus::Family<prometheus::Counter>& retention_deleted_total;       // {kind}

  // The Prometheus text exposition format of everything registered.
  std::string serialize() const;
};

// Bucket boundaries (seconds) for the duration histograms: 1 ms … 60 s.
const prometheus::Histogram::BucketBoundaries& duration_buckets();

}  // namespace tidemark::metrics
