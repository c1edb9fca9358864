// tidemark status [--pipeline NAME] [--json]: per pipeline, its last run, checkpoints, open
// quarantine entries and undelivered events per destination (docs/cli.md "tidemark status").
// Read-only: it never creates the embedded database. The documents come from app/status,
// which serve's GET /v1/pipelines/{name} answers with too.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include <boost/json.hpp>

#include "app/cli/commands.hpp"
#include "app/status/status.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::app {

namespace {

struct StatusOptions {
  DatabaseOptions database;
  std::string pipeline;
  bool json = false;
};

std::string text(const boost::json::value& value) {
  if (value.is_null()) return "-";
  if (value.is_string()) return std::string(value.as_string());
  return boost::json::serialize(value);
}

// A document's milliseconds as 0.4s, 12.3s, 5m 03s, 2h 05m, 3d 04h: as precise as an
// operator reads an age or a duration.
std::string duration(const boost::json::value& milliseconds) {
  const double seconds = milliseconds.to_number<double>() / 1000;
  char buffer[32];
  const auto whole = static_cast<long long>(std::floor(seconds));
  if (seconds < 60) {
    std::snprintf(buffer, sizeof buffer, "%.1fs", seconds);
  } else if (whole < 3600) {
    std::snprintf(buffer, sizeof buffer, "%lldm %02llds", whole / 60, whole % 60);
  } else if (whole < 86400) {
    std::snprintf(buffer, sizeof buffer, "%lldh %02lldm", whole / 3600, whole % 3600 / 60);
  } else {
    std::snprintf(buffer, sizeof buffer, "%lldd %02lldh", whole / 86400, whole % 86400 / 3600);
  }
  return buffer;
}

void print_run(std::ostream& out, const boost::json::object& run) {
  out << "  last run     " << text(run.at("run_id")) << " " << text(run.at("status")) << " (trigger "
      << text(run.at("trigger")) << ", mode " << text(run.at("mode")) << ")\n";
  // Why it was asked for, when someone said (a webhook's reason; a tick missed in an outage).
  if (const auto* reason = run.if_contains("reason"); reason && !reason->is_null()) {
    out << "               reason: " << text(*reason) << "\n";
  }
  out << "               started " << text(run.at("started_at")) << ", finished " << text(run.at("finished_at"));
  if (const auto& took = run.at("duration_ms"); !took.is_null()) out << ", took " << duration(took);
  out << "\n";
  out << "               " << text(run.at("input")) << " input in " << text(run.at("batches")) << " batch(es):";
  const char* separator = " ";
  for (const char* outcome :
       {"inserted", "updated", "unchanged", "stale", "superseded", "duplicate", "invalid", "conflict"}) {
    out << separator << text(run.at(outcome)) << " " << outcome;
    separator = ", ";
  }
  out << "\n";
  if (const auto& error = run.at("error"); !error.is_null()) out << "               error: " << text(error) << "\n";
  if (const auto* rewritten = run.if_contains("rewritten_files"); rewritten && rewritten->is_int64() &&
                                                                  rewritten->as_int64() > 0) {
    out << "               " << text(*rewritten) << " file(s) found changed since they were read, read again\n";
  }
}

void print_status(std::ostream& out, const boost::json::object& status) {
  out << "pipeline " << text(status.at("pipeline"));
  if (const auto& configured = status.at("configured"); configured.is_bool() && !configured.as_bool()) {
    out << " (not in the config; known from the database)";
  }
  out << "\n";
  if (const auto& run = status.at("last_run"); run.is_object()) {
    print_run(out, run.as_object());
  } else {
    out << "  last run     none\n";
  }
  const auto& checkpoints = status.at("checkpoints").as_array();
  if (checkpoints.empty()) out << "  checkpoint   none (the next run reads from the start)\n";
  for (const auto& value : checkpoints) {
    const auto& checkpoint = value.as_object();
    out << "  checkpoint   " << text(checkpoint.at("position")) << " (source " << text(checkpoint.at("source"))
        << "), moved " << duration(checkpoint.at("age_ms")) << " ago\n";
  }
  if (const auto* files = status.if_contains("files_read"); files && files->is_int64() && files->as_int64() > 0) {
    out << "  files read   " << text(*files) << " (the registry the next run compares them with)\n";
  }
  out << "  quarantine   " << text(status.at("open_quarantine")) << " open\n";
  const auto& destinations = status.at("destinations").as_array();
  if (destinations.empty()) out << "  destination  none\n";
  for (const auto& value : destinations) {
    const auto& destination = value.as_object();
    out << "  destination  " << text(destination.at("name")) << " (" << text(destination.at("kind"))
        << "): " << text(destination.at("pending")) << " pending, " << text(destination.at("dead")) << " dead";
    if (const auto& view = destination.at("view"); view.is_object()) {
      out << "; view lag " << duration(view.at("lag_ms")) << ", "
          << text(view.at("dead")) << " dead in the view";
    }
    out << "\n";
  }
}

}  // namespace

void register_status_command(CLI::App& root, int& exit_code) {
  auto options = std::make_shared<StatusOptions>();
  auto* command = root.add_subcommand(
      "status",
      "Per pipeline: its last run (status, trigger, counts, duration), checkpoint position and age, open\n"
      "quarantine entries, and pending and dead outbox events per destination with each view's lag.\n"
      "Read-only: never creates a database. See docs/cli.md and docs/operations.md.");
  options->database.add_to(*command);
  command->add_option("--pipeline", options->pipeline, "Only this pipeline (configured or known to the database)");
  command->add_flag("--json", options->json, "Print one JSON document {\"pipelines\":[…]} (fields in docs/api.md)");
  command->callback([&, options] {
    const auto config = options->database.load_config();
    auto connection = options->database.connect_existing(config);
    const app::config::Config* config_pointer = config ? &*config : nullptr;
    const std::vector<std::string> known = status::known_pipelines(*connection, config_pointer);
    std::vector<std::string> names = known;
    if (!options->pipeline.empty()) {
      if (std::find(known.begin(), known.end(), options->pipeline) == known.end()) {
        std::string list;
        for (const auto& name : known) list += (list.empty() ? "" : ", ") + name;
        throw UsageError("--pipeline " + options->pipeline + ": no such pipeline in " +
                         (config ? options->database.config_file : std::string("(no --config)")) +
                         " or the database (known: " + (list.empty() ? "none" : list) + ")");
      }
      names = {options->pipeline};
    }
    boost::json::array statuses;
    for (const auto& name : names) {
      if (auto status = status::pipeline_status(*connection, config_pointer, name)) statuses.push_back(*status);
    }
    if (options->json) {
      std::cout << boost::json::serialize(boost::json::object{{"pipelines", statuses}}) << "\n";
    } else {
      bool first = true;
      for (const auto& status : statuses) {
        if (!first) std::cout << "\n";
        first = false;
        print_status(std::cout, status.as_object());
      }
      if (statuses.empty()) std::cerr << "no pipelines: none in the config and none in the database\n";
    }
    exit_code = kExitOk;
  });
}

}  // namespace tidemark::app
