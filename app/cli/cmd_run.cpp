#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "app/cli/commands.hpp"
#include "app/cli/exit_status.hpp"
#include "pipeline/store/entity_schema.hpp"
#include "app/cli/metrics_file.hpp"
#include "app/cli/number_check.hpp"
#include "app/cli/progress.hpp"
#include "app/cli/signals.hpp"
#include "app/wiring/run_request.hpp"
#include "connectors/file/format.hpp"
#include "connectors/nats/streams.hpp"
#include "pipeline/run/partition_worker.hpp"
#include "pipeline/run/run_controller.hpp"

namespace tidemark::app {

namespace {

struct RunOptions {
  DatabaseOptions database;
  std::string pipeline;
  std::string source;
  std::string format;
  std::size_t batch_size = 0;
  std::string max_rejected;
  bool replay = false;
  bool dry_run = false;
  bool json = false;
  bool accept_gap = false;
  std::string metrics_file;
};

// The run as this process sees it: the requests (one per partition of a nats source, else
// one) and the source they read.
struct PlannedRun {
  std::vector<pipeline::RunRequest> requests;
  app::config::SourceConfig source;
};

// The pipeline as this run sees it: the config's, when given, with --source, --format and
// --batch-size overriding it; without a config, the options alone.
PlannedRun build_request(const RunOptions& options, const std::optional<app::config::Config>& config) {
  app::config::PipelineConfig pipeline;
  pipeline.name = options.pipeline;
  if (config) {
    const auto found = config->pipelines.find(options.pipeline);
    if (found == config->pipelines.end()) {
      std::string known;
      for (const auto& [name, ignored] : config->pipelines) known += (known.empty() ? "" : ", ") + name;
      throw UsageError("--pipeline " + options.pipeline + ": no such pipeline in " + options.database.config_file +
                       " (it defines: " + (known.empty() ? "none" : known) + ")");
    }
    pipeline = found->second;
    // --source and --format name a file; silently reading the config's table or API instead
    // would load something else than the user asked for.
    if (!pipeline.source.capabilities().takes_file_override && (!options.source.empty() || !options.format.empty())) {
      throw UsageError(std::string(options.source.empty() ? "--format" : "--source") + " applies to file sources only: " +
                       "pipeline " + options.pipeline + " reads its kind " + std::string(pipeline.source.kind()) +
                       " source as " +
                       options.database.config_file + " configures it");
    }
  } else if (options.source.empty()) {
    throw UsageError("--source PATH is required without --config (a .csv/.jsonl/.ndjson file or a folder)");
  }
  bool format_known = config.has_value();  // the config's pipeline has one
  // Without a config the source is a file source (SourceOptions' first alternative).
  auto* file = pipeline.source.get_if<connectors::file::FileSourceOptions>();
  if (!options.source.empty()) {
    file->path = options.source;
    // A new path brings its own format when its extension tells one (ignoring case, as in the config).
    if (const auto format =
            connectors::file::format_from_extension(options.source, connectors::file::ExtensionCase::kIgnore)) {
      file->format = *format;
      format_known = true;
    }
  }
  if (!options.format.empty()) {
    file->format = connectors::file::parse_format(options.format).value();  // CLI11 checked: csv or jsonl
    format_known = true;
  }
  if (!format_known) {
    throw UsageError("cannot tell the format of " + file->path +
                     " from its extension: pass --format csv or --format jsonl");
  }
  if (options.batch_size > 0) pipeline.batch_size = options.batch_size;
  if (!options.max_rejected.empty()) {
    pipeline.max_rejected = pipeline::parse_rejection_limit(options.max_rejected);
    if (!pipeline.max_rejected) {
      throw UsageError("--max-rejected " + options.max_rejected +
                       ": expected a count (e.g. 100) or a percentage of the run's input (e.g. 5%)");
    }
  }
  if (options.accept_gap) {
    // A gap is a nats partition's own notion (its stream lost messages past the checkpoint).
    auto* nats = pipeline.source.get_if<connectors::nats::NatsSourceOptions>();
    if (nats == nullptr) {
      throw UsageError("--accept-gap applies to nats sources only: pipeline " + options.pipeline + " reads a kind " +
                       std::string(pipeline.source.kind()) + " source");
    }
    nats->accept_gap = true;
  }
  std::vector<pipeline::RunRequest> requests = partition_requests(
      pipeline, config ? config->entity(pipeline.entity) : pipeline::built_in_transaction_entity());
  for (pipeline::RunRequest& request : requests) {
    request.replay = options.replay;
    request.dry_run = options.dry_run;
  }
  return {std::move(requests), pipeline.source};
}

// What the runs of a partitioned source's partitions add up to: one summary, with each
// partition's checkpoint by its stream (source identity).
struct PartitionedSummary {
  pipeline::RunSummary total;
  bool partitioned = false;  // a partitioned source's: `partitions` holds those this worker ran
  std::vector<std::pair<std::string, pipeline::RunSummary>> partitions;
};

void add_partition(PartitionedSummary& summary, const std::string& stream, const pipeline::RunSummary& partition) {
  pipeline::RunSummary& total = summary.total;
  total.pipeline = partition.pipeline;
  total.run_id = partition.run_id;
  total.dry_run = partition.dry_run;
  total.batches += partition.batches;
  total.counts += partition.counts;
  total.stopped_early = total.stopped_early || partition.stopped_early;
  total.pending_tail_bytes += partition.pending_tail_bytes;
  total.rewritten_files.insert(total.rewritten_files.end(), partition.rewritten_files.begin(),
                               partition.rewritten_files.end());
  summary.partitions.emplace_back(stream, partition);
}

std::string summary_json(const PartitionedSummary& partitioned) {
  const pipeline::RunSummary& summary = partitioned.total;
  boost::json::object json;
  json["pipeline"] = summary.pipeline;
  // A dry run records no run: no id, and a field that says so (absent from a real run's summary).
  if (summary.dry_run) {
    json["run_id"] = nullptr;
    json["dry_run"] = true;
  } else {
    json["run_id"] = summary.run_id;
  }
  json["batches"] = summary.batches;
  json["input"] = summary.counts.input();
  for (pipeline::Outcome outcome : pipeline::kAllOutcomes) {
    json[pipeline::to_string(outcome)] = summary.counts[outcome];
  }
  if (!partitioned.partitioned) {
    json["checkpoint"] = summary.checkpoint;
  } else {
    // Partitioned: a checkpoint, and a run, per stream.
    boost::json::object checkpoints;
    boost::json::object runs;
    for (const auto& [stream, partition] : partitioned.partitions) {
      checkpoints[stream] = partition.checkpoint;
      if (!partition.dry_run) runs[stream] = partition.run_id;
    }
    json["checkpoint"] = std::move(checkpoints);
    if (!summary.dry_run) json["runs"] = std::move(runs);
  }
  json["pending_tail_bytes"] = summary.pending_tail_bytes;
  boost::json::array rewritten;
  for (const pipeline::ChangedFile& changed : summary.rewritten_files) {
    rewritten.push_back(boost::json::object{{"file", changed.file}, {"change", changed.change}});
  }
  json["rewritten_files"] = std::move(rewritten);
  return boost::json::serialize(json);
}

// "1 batch", "2 batches".
std::string count_of(std::uint64_t count, const std::string& one, const std::string& many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

void print_summary(const PartitionedSummary& partitioned) {
  const pipeline::RunSummary& summary = partitioned.total;
  std::cout << "pipeline " << summary.pipeline << ", "
            << (summary.dry_run ? "dry run (rolled back, nothing written)" : "run " + std::to_string(summary.run_id))
            << ": "
            << count_of(summary.batches, "batch", "batches") << ", "
            << count_of(summary.counts.input(), "record", "records") << "\n";
  for (pipeline::Outcome outcome : pipeline::kAllOutcomes) {
    std::cout << "  " << pipeline::to_string(outcome) << ": " << summary.counts[outcome] << "\n";
  }
  if (!partitioned.partitioned) {
    std::cout << "checkpoint: " << (summary.checkpoint.empty() ? "(start)" : summary.checkpoint)
              << (summary.dry_run ? " (not stored: a dry run)" : "") << std::endl;
  }
  if (partitioned.partitioned && partitioned.partitions.empty()) {
    std::cout << "no partition ran: other workers own every partition" << std::endl;
  }
  for (const auto& [stream, partition] : partitioned.partitions) {
    std::cout << "checkpoint " << stream << ": " << (partition.checkpoint.empty() ? "(start)" : partition.checkpoint)
              << (partition.dry_run ? " (not stored: a dry run)" : " (run " + std::to_string(partition.run_id) + ")")
              << ", " << count_of(partition.counts.input(), "record", "records") << std::endl;
  }
  if (summary.stopped_early) {
    std::cout << "stopped by a signal before the source's end"
              << (summary.dry_run ? "" : "; the next run goes on from the checkpoint") << std::endl;
  }
  for (const pipeline::ChangedFile& changed : summary.rewritten_files) {
    std::cout << "read again from its start: " << changed.file << " (" << changed.change << ")" << std::endl;
  }
  if (summary.pending_tail_bytes > 0) {
    std::cout << "pending: " << count_of(summary.pending_tail_bytes, "byte", "bytes")
              << " of a last line without a newline, left for the next run" << std::endl;
  }
}

// What the committed batches added up to, also when the run then fails.
struct Committed {
  pipeline::OutcomeCounts counts;
  std::uint64_t batches = 0;
  std::uint64_t rewritten_files = 0;  // of the runs that ended
};

// Runs the pipeline as the options say; returns the exit code.
int run_command(const RunOptions& options, Committed& committed) {
  const auto config = options.database.load_config();
  PlannedRun planned = build_request(options, config);
  pipeline::db::Database database(options.database.connect_url(config));
  // A bar on a terminal; the per-batch log lines otherwise. Created before the run's threads.
  // The bar measures bytes of files: a partitioned source logs its batches instead.
  const std::unique_ptr<ProgressBar> bar =
      planned.source.capabilities().partitioned ? nullptr : ProgressBar::for_terminal();
  // SIGINT/SIGTERM: the batch in hand commits, the run ends `stopped` and the next run
  // goes on from its checkpoint; a second signal exits at once (the open batch rolls back).
  std::atomic<bool> stop{false};
  int stop_signal = 0;
  for (pipeline::RunRequest& request : planned.requests) {
    request.database = &database;
    request.on_batch = [&committed](const pipeline::BatchReport& batch) {
      committed.counts += batch.counts;
      ++committed.batches;
    };
    if (bar) {
      // Only a file source's input has a size in bytes; another's bar has no total.
      const auto* file = planned.source.get_if<connectors::file::FileSourceOptions>();
      request.open_source = [open = request.open_source, path = file != nullptr ? file->path : std::string(),
                             format = file != nullptr ? file->format : connectors::file::Format::kCsv, bar = bar.get()] {
        return with_progress(open(), std::make_shared<const SourceBytes>(path, format), *bar);
      };
    }
    request.stop_requested = &stop;
  }
  block_stop_signals();
  PartitionedSummary partitioned;
  partitioned.total.pipeline = options.pipeline;  // also when this worker took no partition
  const bool partitioned_source = planned.source.capabilities().partitioned;
  partitioned.partitioned = partitioned_source;
  // A partitioned source's run is a worker's (docs/scale-out.md "Workers"): it runs the
  // partitions it can take, each under its lease instead of the pipeline's lock, beside other
  // workers. A dry run writes nothing and keeps to the pipeline's lock.
  std::unique_ptr<pipeline::PartitionWorker> worker;
  if (partitioned_source && !options.dry_run) {
    const app::config::SourceConfig& source = planned.source;
    worker = std::make_unique<pipeline::PartitionWorker>(
        database, options.pipeline, source.partition_count(),
        pipeline::LeaseSettings{source.owner_timeout(), source.rebalance_interval()});
    std::vector<pipeline::RunRequest> owned;
    for (const pipeline::PartitionLease& lease : worker->balance()) {
      owned.push_back(std::move(planned.requests[static_cast<std::size_t>(lease.partition)]));
      owned.back().partition = pipeline::PartitionOwnership{&worker->leases(), lease};
    }
    if (owned.size() < planned.requests.size()) {
      spdlog::info("pipeline {}: worker {} takes {} of {} partitions; other workers run the rest", options.pipeline,
                   worker->leases().worker_id(), owned.size(), planned.requests.size());
    }
    planned.requests = std::move(owned);
  }
  run_until_stopped(
      [&] {
        try {
          // Partitions one after the other, each a run of its own (docs/scale-out.md): a batch
          // never spans two, and a stop ends the loop after the partition in hand.
          for (std::size_t i = 0; i < planned.requests.size() && !stop; ++i) {
            const pipeline::RunRequest& request = planned.requests[i];
            const pipeline::RunSummary summary = pipeline::run_pipeline(request);
            committed.rewritten_files += summary.rewritten_files.size();
            if (!partitioned_source) {
              partitioned.total = summary;
            } else {
              const int partition = request.partition ? request.partition->lease.partition : static_cast<int>(i);
              add_partition(partitioned, planned.source.partition_name(partition), summary);
            }
          }
        } catch (const pipeline::db::EntitySchemaError& error) {
          throw UsageError(error.what());  // the table cannot hold the declaration: a config error
        }
      },
                    [&](int signal) {
                      stop_signal = signal;
                      stop = true;
                    },
                    SecondSignal::kExitAtOnce);
  // A stop between two partitions leaves the later ones unread.
  if (partitioned_source && partitioned.partitions.size() < planned.requests.size()) {
    partitioned.total.stopped_early = true;
  }
  const pipeline::RunSummary& summary = partitioned.total;
  if (options.json) {
    std::cout << summary_json(partitioned) << std::endl;
  } else {
    print_summary(partitioned);
  }
  // Stopped by a signal before the source's end: as a shell reports a signal, so that a
  // script or cron wrapper sees the run did not finish.
  return summary.stopped_early && stop_signal != 0 ? 128 + stop_signal : kExitOk;
}

void write_run_metrics(const RunOptions& options, const Committed& committed, int exit_code, double seconds) {
  const std::filesystem::path path = options.metrics_file;
  RunMetrics metrics;
  metrics.pipeline = options.pipeline;
  metrics.counts = committed.counts;
  metrics.batches = committed.batches;
  metrics.rewritten_files = committed.rewritten_files;
  metrics.duration_seconds = seconds;
  metrics.exit_code = exit_code;
  metrics.finished_at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // A failed run keeps the last success time: the staleness alert measures from it.
  metrics.last_success_at = exit_code == kExitOk ? metrics.finished_at : previous_last_success(path, options.pipeline);
  write_file_atomically(path, metrics_text(metrics));
}

}  // namespace

void register_run_command(CLI::App& root, int& exit_code) {
  auto options = std::make_shared<RunOptions>();
  auto* run = root.add_subcommand(
      "run",
      "Read a pipeline's source from its checkpoint to the end, batch by batch, and exit.\n"
      "Exit 0: the run completed (quarantined records are not a failure); 1: the run failed (also: an unusable\n"
      "file, or more rejected records than --max-rejected); 2: usage error. SIGINT/SIGTERM: the batch in hand\n"
      "commits, the run is recorded as stopped, exit 128+signal; a second signal exits at once.");
  options->database.add_to(*run);
  run->add_option("--pipeline", options->pipeline, "Pipeline name (its checkpoint and lock are per pipeline)")
      ->required();
  run->add_option("--source", options->source,
                  "A .csv/.jsonl/.ndjson file or a folder of them (read in lexical order); overrides the config");
  run->add_option("--format", options->format, "csv or jsonl (default: from the file extension or the config)")
      ->check(CLI::IsMember({"csv", "jsonl"}));
  run->add_option("--batch-size", options->batch_size, "Records per batch and transaction (default 10000)")
      ->check(whole_number(1, 1000000));
  run->add_option("--max-rejected", options->max_rejected,
                  "Fail the run when its rejected (invalid + conflict) records exceed N, or N% of its input; the "
                  "batch that crosses it rolls back (default: unlimited, or the config's max_rejected)");
  run->add_flag("--replay", options->replay,
                "Read the source from its beginning, ignoring the checkpoint (safe: no duplicate state or effects; "
                "the checkpoint never moves back)");
  auto* dry_run = run->add_flag(
      "--dry-run", options->dry_run,
      "Read, validate, plan and apply every batch against the stored rows as a run would, under the pipeline's "
      "lock, in one transaction that is rolled back: print the outcomes a run would have and write nothing (no "
      "state, outbox, quarantine, ledger, checkpoint or run row)");
  run->add_flag("--accept-gap", options->accept_gap,
                "nats sources: take a partition whose stream lost messages after the checkpoint (purged, expired) "
                "or was deleted and created again, loading what it still has, instead of refusing it");
  run->add_flag("--json", options->json, "Print the run summary as one JSON object on the last line of stdout");
  run->add_option("--metrics-file", options->metrics_file,
                  "After the run, success or failure, write its counts, duration and exit status to PATH in the "
                  "Prometheus text format, atomically (for node_exporter's textfile collector: PATH ends in .prom)")
      ->option_text("PATH")
      // A dry run's counts would read as a real run's to the collector and reset its staleness alert.
      ->excludes(dry_run);
  run->callback([&, options] {
    const auto started = std::chrono::steady_clock::now();
    const auto seconds = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };
    Committed committed;
    try {
      exit_code = run_command(*options, committed);
    } catch (const std::exception& error) {
      if (!options->metrics_file.empty()) {
        try {
          write_run_metrics(*options, committed, exit_code_for_current_exception(), seconds());
        } catch (const std::exception& also) {
          spdlog::error("{}", also.what());  // the run's own error follows, and decides the exit code
        }
      }
      throw;
    }
    // A run that went well but could not report it fails: cron's monitoring would go blind.
    if (!options->metrics_file.empty()) write_run_metrics(*options, committed, exit_code, seconds());
  });
}

}  // namespace tidemark::app
