#pragma once
// The one place serve counts what its pipelines do (tidemark_records_total, _batches_total,
// _runs_total, _batch_duration_seconds, _checkpoint_timestamp_seconds, _nats_partitions_*):
// the run queue and the stream consumers for the runs they drive, the quarantine handler for
// the one-record batch of a release.
// Thread-safe (the prometheus-cpp families are).
#include <map>
#include <string>

#include "app/config/config.hpp"
#include "metrics/metrics.hpp"
#include "pipeline/core/record.hpp"
#include "pipeline/run/run_controller.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::app::serve {

class PipelineMetrics {
 public:
  // Every series of the config's pipelines exists from the start, so rates and alerts see
  // zeros rather than gaps; the checkpoint gauge starts at the last advance recorded in
  // the database (not at 0, which would look stuck).
  PipelineMetrics(const app::config::Config& config, pipeline::db::Database& pool, metrics::Metrics& metrics);

  // A batch committed for pipeline `name`: a run's, or a quarantine release's.
  void batch_committed(const std::string& name, const pipeline::OutcomeCounts& counts);
  // A run's committed batch, with its duration; the checkpoint moved now.
  void run_batch(const std::string& name, const pipeline::BatchReport& report);
  // A run ended: "succeeded", "stopped" or "failed" (a failed run's batch failed too).
  void run_ended(const std::string& name, app::config::Trigger trigger, const std::string& status);
  // A run found `count` files changed and read them again (RunSummary::rewritten_files).
  void files_reread(const std::string& name, std::size_t count);
  // A nats pipeline's consumer: how many partitions it owns now; a partition's run refused.
  void partitions_owned(const std::string& name, std::size_t owned);
  void partition_refused(const std::string& name, int partition);

 private:
  // The entity pipeline `name` loads (the `entity` label); the built-in one for a pipeline
  // gone from the config (a late quarantine release).
  const std::string& entity_of(const std::string& name) const;

  metrics::Metrics& metrics_;
  std::map<std::string, std::string> entities_;  // pipeline -> entity name
};

}  // namespace tidemark::app::serve
