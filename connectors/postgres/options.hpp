#pragma once
// What a `kind: postgres` source is configured with (docs/sources.md "postgres"), checked by
// the config parser and, against the source database's catalog, when the source opens.
// Plain values: app/config includes this without libpqxx.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace tidemark::connectors::postgres {

// How the source keeps a transaction that commits late, with an older cursor value, from
// being skipped (the late-commit trap).
enum class Consistency {
  kSafetyLag,  // never read rows whose first cursor column (a timestamp) is newer than now() - safety_lag
  kSnapshot,   // stop before the first row whose inserting transaction is not older than the snapshot's xmin
};

inline constexpr std::chrono::milliseconds kDefaultSafetyLag = std::chrono::seconds(5);

struct Options {
  std::string url_env;               // the environment variable holding the source database's URL
  std::string table;                 // a table or view, [schema.]name as SQL writes it (public.orders)
  std::vector<std::string> cursor;   // the keyset columns, in order (updated_at, id)
  std::vector<std::pair<std::string, std::string>> columns;  // renames: (field, column)
  Consistency consistency = Consistency::kSafetyLag;
  std::chrono::milliseconds safety_lag = kDefaultSafetyLag;
  // Where the source is configured ("tidemark.yaml:7: pipelines.orders.source"), so that an
  // error found only against the catalog (a cursor column that is no timestamp) names it too.
  std::string origin;
};

}  // namespace tidemark::connectors::postgres
