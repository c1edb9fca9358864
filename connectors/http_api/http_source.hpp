#pragma once
// The HTTP source (`kind: http`): records from a paged JSON API, page after page, resuming
// at the exact record a checkpoint names (docs/sources.md "http"). Boost.Beast stays in the
// .cpp files.
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "connectors/http_api/page.hpp"
#include "pipeline/core/record.hpp"
#include "pipeline/core/source.hpp"

namespace tidemark::connectors::http_api {

// How a page names the next one.
enum class Paging {
  kJsonField,   // next: {json: PATH}: a cursor at a dotted path of the page, put into {checkpoint}
  kLinkHeader,  // next: {link_header: REL}: the URL of the Link header's link with that rel
  kNone,        // one page only
};

struct HttpSourceOptions {
  // http(s)://… ; every "{checkpoint}" is replaced by the page cursor, percent-encoded ("" at
  // the start). With link_header, later pages are fetched from the URL the Link header names.
  std::string url;
  PageFormat format = PageFormat::kJson;
  JsonPath records;  // json: where the records' array is; empty: the page is the array
  Paging paging = Paging::kNone;
  JsonPath next_json;         // kJsonField
  std::string next_relation;  // kLinkHeader
  std::string auth_header;     // a header sent with every request ("" for none)...
  std::string auth_value_env;  // ...with the value of this environment variable (never logged)
  std::optional<double> max_rps;  // requests per second at most; unlimited when unset
  std::string ca_file;            // https: PEM bundle trusted instead of the system store
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{30000};
  int max_attempts = 8;  // per page: 408, 429, 5xx and transport failures are retried
  std::chrono::milliseconds base_delay{250};  // backoff with full jitter (pipeline/core/backoff.hpp)
  std::chrono::milliseconds max_delay{30000};
  std::size_t max_page_bytes = std::size_t{64} << 20;
};

// The format name a quarantined record of this source is stored with: one JSON object.
inline constexpr std::string_view kRecordFormat = "json";

// Checks the options (the URL, the trust store, the auth variable) and connects lazily, on
// the first read. Throws pipeline::SourceError naming what is wrong.
std::unique_ptr<pipeline::Source> open_http_source(const HttpSourceOptions& options,
                                                   std::shared_ptr<const pipeline::RecordLayout> layout);

}  // namespace tidemark::connectors::http_api
