#pragma once
// Pipeline status and run history, read from the database: what `tidemark status` prints
// and what serve answers on GET /v1/runs and GET /v1/pipelines/{name}. One place for both,
// so the CLI's --json and the API carry the same documents (field names in docs/api.md).
// Read-only: every statement is a plain SELECT (sql/status/).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <pqxx/pqxx>

#include "app/config/config.hpp"

namespace tidemark::app::status {

// The statuses runs.status takes (docs/api.md), for filters.
inline constexpr std::string_view kRunStatuses[] = {"queued", "running", "succeeded", "stopped", "failed"};
bool is_run_status(std::string_view status);

inline constexpr std::int64_t kDefaultRunLimit = 50;
inline constexpr std::int64_t kMaxRunLimit = 500;

struct RunFilter {
  std::string pipeline;  // "" for every pipeline
  std::string status;    // "" for any; else one of kRunStatuses
  std::int64_t before = 0;  // only runs with a smaller id (a cursor); 0 for none
  std::int64_t limit = kDefaultRunLimit;
};

// `document` as shown (every API answer, hence the console, and `status`): its members that
// can hold a source's URL, "url", "position", "checkpoint" and "error", with the credentials
// and query strings of the URLs in them redacted by pipeline::redact_urls, as run
// messages and logs are. A position holds one when an http source follows Link headers
// (the next page's URL, with the source URL's api_key as a rule). Other members (a
// quarantined record's raw text) are data and shown as they are.
void redact_urls_shown(boost::json::object& document);

// Runs newest first, each the document of GET /v1/runs/{id} plus duration_ms.
boost::json::array list_runs(pqxx::connection& connection, const RunFilter& filter);

// Every pipeline the config lists or the database knows (runs, checkpoints, open quarantine
// entries), sorted by name.
std::vector<std::string> known_pipelines(pqxx::connection& connection, const app::config::Config* config);

// Pipeline `name`'s status: last run, checkpoints and their age, open quarantine entries,
// undelivered outbox events per destination, and each view destination's lag. nullopt when
// neither the config nor the database knows the pipeline. `config` may be null (no --config).
std::optional<boost::json::object> pipeline_status(pqxx::connection& connection, const app::config::Config* config,
                                                   const std::string& name);

}  // namespace tidemark::app::status
