#include "metrics/metrics.hpp"

#include <prometheus/text_serializer.h>

namespace tidemark::metrics {

Metrics::Metrics()
    : registry(std::make_shared<prometheus::Registry>()),
      records_total(prometheus::BuildCounter()
                        .Name("tidemark_records_total")
                        .Help("Input records by pipeline, entity and outcome (the eight outcomes of a batch)")
                        .Register(*registry)),
      batches_total(prometheus::BuildCounter()
                        .Name("tidemark_batches_total")
                        .Help("Batches by final status")
                        .Register(*registry)),
      batch_duration_seconds(prometheus::BuildHistogram()
                                 .Name("tidemark_batch_duration_seconds")
                                 .Help("Time to read, validate, plan and commit one batch")
                                 .Register(*registry)),
      runs_total(prometheus::BuildCounter()
                     .Name("tidemark_runs_total")
                     .Help("Pipeline runs by trigger and final status")
                     .Register(*registry)),
      checkpoint_timestamp_seconds(prometheus::BuildGauge()
                                       .Name("tidemark_checkpoint_timestamp_seconds")
                                       .Help("Unix time of the last checkpoint advance")
                                       .Register(*registry)),
      source_files_reread_total(prometheus::BuildCounter()
                                    .Name("tidemark_source_files_reread_total")
                                    .Help("Files of a file source found changed since a run read them, read again "
                                          "from their start")
                                    .Register(*registry)),
      outbox_pending(prometheus::BuildGauge()
                         .Name("tidemark_outbox_pending")
                         .Help("Outbox events not yet delivered or dead")
                         .Register(*registry)),
      outbox_deliveries_total(prometheus::BuildCounter()
                                  .Name("tidemark_outbox_deliveries_total")
                                  .Help("Delivery attempts by result (delivered, retry, dead)")
                                  .Register(*registry)),
      outbox_delivery_duration_seconds(prometheus::BuildHistogram()
                                           .Name("tidemark_outbox_delivery_duration_seconds")
                                           .Help("Time from sending an outbox event to the destination's answer")
                                           .Register(*registry)),
      nats_duplicates_total(prometheus::BuildCounter()
                                .Name("tidemark_nats_duplicates_total")
                                .Help("Publishes to a NATS destination that its stream deduplicated by Nats-Msg-Id")
                                .Register(*registry)),
      nats_partitions_owned(prometheus::BuildGauge()
                                .Name("tidemark_nats_partitions_owned")
                                .Help("Partitions of a nats pipeline this serve process owns and consumes")
                                .Register(*registry)),
      nats_partitions_refused_total(prometheus::BuildCounter()
                                        .Name("tidemark_nats_partitions_refused_total")
                                        .Help("Runs of a nats partition refused because its stream lost messages "
                                              "after the checkpoint or is not the checkpoint's stream")
                                        .Register(*registry)),
      webhook_requests_total(prometheus::BuildCounter()
                                 .Name("tidemark_webhook_requests_total")
                                 .Help("Incoming run-trigger webhook requests by result")
                                 .Register(*registry)),
      view_lag_seconds(prometheus::BuildGauge()
                           .Name("tidemark_view_lag_seconds")
                           .Help("Age of the oldest outbox event a view has not applied yet (pending or dead)")
                           .Register(*registry)),
      view_dead_events(prometheus::BuildGauge()
                           .Name("tidemark_view_dead_events")
                           .Help("Outbox events of a view that the relay gave up on: the view misses them")
                           .Register(*registry)),
      view_events_total(prometheus::BuildCounter()
                            .Name("tidemark_view_events_total")
                            .Help("Events handed to a view's sink, by what became of them (applied, duplicate, gap, "
                                  "dead)")
                            .Register(*registry)),
      component_restarts_total(prometheus::BuildCounter()
                                   .Name("tidemark_component_restarts_total")
                                   .Help("Restarts of a supervised component (relay) after an unexpected error")
                                   .Register(*registry)),
      retention_deleted_total(prometheus::BuildCounter()
                                  .Name("tidemark_retention_deleted_total")
                                  .Help("Rows deleted by retention, by kind (docs/retention.md)")
                                  .Register(*registry)) {}

std::string Metrics::serialize() const { return prometheus::TextSerializer().Serialize(registry->Collect()); }

const prometheus::Histogram::BucketBoundaries& duration_buckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                                   0.25,  0.5,    1,     2.5,  5,     10,   30, 60};
  return kBuckets;
}

}  // namespace tidemark::metrics
