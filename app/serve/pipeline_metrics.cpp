#include "app/serve/pipeline_metrics.hpp"

#include <ctime>
#include <vector>

#include <spdlog/spdlog.h>

#include "pipeline/store/pg/row.hpp"
#include "sql/statements.hpp"

namespace tidemark::app::serve {

PipelineMetrics::PipelineMetrics(const app::config::Config& config, pipeline::db::Database& pool, metrics::Metrics& metrics)
    : metrics_(metrics) {
  for (const auto& [name, pipeline] : config.pipelines) {
    entities_[name] = pipeline.entity;
    for (pipeline::Outcome outcome : pipeline::kAllOutcomes) {
      metrics_.records_total.Add(
          {{"pipeline", name}, {"entity", pipeline.entity}, {"outcome", std::string(pipeline::to_string(outcome))}});
    }
    for (const char* status : {"committed", "failed"}) metrics_.batches_total.Add({{"pipeline", name}, {"status", status}});
    // serve starts a partitioned pipeline's runs itself, as its streams fill (stream_consumers.hpp).
    const bool streamed = pipeline.source.capabilities().partitioned;
    const auto triggers = streamed ? std::vector<app::config::Trigger>{app::config::Trigger::kStream}
                                   : std::vector<app::config::Trigger>{app::config::Trigger::kSchedule,
                                                                    app::config::Trigger::kWebhook};
    for (const auto trigger : triggers) {
      for (const char* status : {"succeeded", "stopped", "failed"}) {
        metrics_.runs_total.Add({{"pipeline", name}, {"trigger", std::string(to_string(trigger))}, {"status", status}});
      }
    }
    if (streamed) {
      metrics_.nats_partitions_owned.Add({{"pipeline", name}});
      for (int partition = 0; partition < pipeline.source.partition_count(); ++partition) {
        metrics_.nats_partitions_refused_total.Add({{"pipeline", name}, {"partition", std::to_string(partition)}});
      }
    }
    metrics_.batch_duration_seconds.Add({{"pipeline", name}}, metrics::duration_buckets());
    if (pipeline.source.capabilities().counts_reread_files) {
      metrics_.source_files_reread_total.Add({{"pipeline", name}});
    }
  }
  try {
    pool.with_connection("reading checkpoint times", [&](pqxx::connection& connection) {
      pqxx::nontransaction txn(connection);
      for (const auto& [name, pipeline] : config.pipelines) {
        const pipeline::db::Row row(txn.exec_params1(std::string(sql::kServeCheckpointTime), name));
        if (const auto updated_at = row.optional<double>("updated_at")) {
          metrics_.checkpoint_timestamp_seconds.Add({{"pipeline", name}}).Set(*updated_at);
        }
      }
    });
  } catch (const std::exception& error) {
    spdlog::warn("could not read checkpoint times for the metrics: {}", error.what());
  }
}

const std::string& PipelineMetrics::entity_of(const std::string& name) const {
  static const std::string kBuiltIn(pipeline::kBuiltInEntityName);
  const auto found = entities_.find(name);
  return found == entities_.end() ? kBuiltIn : found->second;
}

void PipelineMetrics::batch_committed(const std::string& name, const pipeline::OutcomeCounts& counts) {
  for (pipeline::Outcome outcome : pipeline::kAllOutcomes) {
    // A configured pipeline's series exist from the start; a count of 0 creates none for
    // a pipeline gone from the config (a late quarantine release).
    if (counts[outcome] == 0) continue;
    metrics_.records_total
        .Add({{"pipeline", name}, {"entity", entity_of(name)}, {"outcome", std::string(pipeline::to_string(outcome))}})
        .Increment(static_cast<double>(counts[outcome]));
  }
  metrics_.batches_total.Add({{"pipeline", name}, {"status", "committed"}}).Increment();
}

void PipelineMetrics::run_batch(const std::string& name, const pipeline::BatchReport& report) {
  batch_committed(name, report.counts);
  metrics_.batch_duration_seconds.Add({{"pipeline", name}}, metrics::duration_buckets()).Observe(report.seconds);
  metrics_.checkpoint_timestamp_seconds.Add({{"pipeline", name}}).Set(static_cast<double>(std::time(nullptr)));
}

void PipelineMetrics::run_ended(const std::string& name, app::config::Trigger trigger, const std::string& status) {
  metrics_.runs_total.Add({{"pipeline", name}, {"trigger", std::string(to_string(trigger))}, {"status", status}})
      .Increment();
  if (status == "failed") metrics_.batches_total.Add({{"pipeline", name}, {"status", "failed"}}).Increment();
}

void PipelineMetrics::files_reread(const std::string& name, std::size_t count) {
  if (count == 0) return;
  metrics_.source_files_reread_total.Add({{"pipeline", name}}).Increment(static_cast<double>(count));
}

void PipelineMetrics::partitions_owned(const std::string& name, std::size_t owned) {
  metrics_.nats_partitions_owned.Add({{"pipeline", name}}).Set(static_cast<double>(owned));
}

void PipelineMetrics::partition_refused(const std::string& name, int partition) {
  metrics_.nats_partitions_refused_total.Add({{"pipeline", name}, {"partition", std::to_string(partition)}}).Increment();
}

}  // namespace tidemark::app::serve
