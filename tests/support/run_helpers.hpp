#pragma once
// Helpers for integration tests that drive the whole pipeline (run_pipeline) over files
// written into a temporary folder, and read tables back as whole rows.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "connectors/file/format.hpp"
#include "pipeline/run/run_controller.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::testing {

// A fresh folder under the system temporary directory, removed with its contents.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `content` (byte for byte) to `name` inside the folder; returns its path.
  std::filesystem::path write(const std::string& name, const std::string& content) const;
  // Appends `content` to `name` inside the folder.
  void append(const std::string& name, const std::string& content) const;

 private:
  std::filesystem::path path_;
};

// Retries that fit a test: quick, but enough attempts to ride out a terminated backend.
pipeline::db::RetryPolicy fast_retries();

// A request that reads the file or folder `source` into `db`, with destination "ledger".
pipeline::RunRequest file_request(const TestDatabase& db, const std::string& pipeline,
                                  const std::filesystem::path& source, std::size_t batch_size = 1000,
                                  bool replay = false,
                                  connectors::file::Format format = connectors::file::Format::kCsv);

// Waits until no tidemark backend (application_name 'tidemark%', as pipeline::db::connect
// names them) is connected to the database of `url`.
void wait_for_no_tidemark_backends(const std::string& url);
// Waits until exactly `count` of them are (a terminated backend takes a moment to exit).
void wait_for_tidemark_backends(const std::string& url, int count);

// How many sessions `action` opened to the database of `url` (pg_stat_database.sessions,
// read once every tidemark backend it started has ended and so reported itself), while
// `kept` tidemark backends opened before it stay connected (a db::Database's pool).
std::int64_t sessions_opened_by(const std::string& url, const std::function<void()>& action, int kept = 0);

// Terminates every tidemark backend of `db` and waits until they are gone; returns how many.
int terminate_tidemark_backends(const TestDatabase& db);

// Whole rows of a query, each column as text; NULL is "<null>" so it differs from ''.
using Rows = std::vector<std::vector<std::string>>;
Rows query_rows(const TestDatabase& db, const std::string& sql);

// The columns of transaction_state for one key, in table order (created_at and updated_at
// included, so "unchanged" also proves that the row was not rewritten).
Rows state_row(const TestDatabase& db, const std::string& transaction_id);

// The non-zero counts, in the order of kAllOutcomes: "inserted 2, invalid 1" ("none" when
// all are zero), so that a failed comparison shows every outcome at once.
std::string counts_text(const pipeline::OutcomeCounts& counts);

}  // namespace tidemark::testing
