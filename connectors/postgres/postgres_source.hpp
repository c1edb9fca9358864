#pragma once
// The postgres connector: an incremental keyset read of a table or view in another PostgreSQL
// database (docs/sources.md "postgres"). Rows come in cursor order, `WHERE (cursor) > (last)
// ORDER BY cursor LIMIT batch`, each in a read-only transaction of the source's own
// connection; the position is the last row's cursor tuple (cursor.hpp).
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "connectors/postgres/cursor.hpp"
#include "connectors/postgres/options.hpp"
#include "pipeline/core/entity.hpp"
#include "pipeline/core/record_decoder.hpp"
#include "pipeline/core/source.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::connectors::postgres {

// The format a row's raw text is in, stored with a quarantined row: the row as one JSON
// object on one line, by field name, so the JSON Lines decoder decodes it again.
inline constexpr std::string_view kRowFormat = "jsonl";

// Opening checks the configuration against the source's catalog and throws
// pipeline::SourceError naming the config key when it does not fit (a missing column, a
// cursor that is not unique or may be NULL, safety_lag without a timestamp first column,
// snapshot on a view). Rows are decoded by `row_decoder` from their raw JSON object, the one
// way a quarantine release decodes them again. A source outage is retried by `retry`, like
// the target's; RetriesExhausted when it is spent.
class PostgresSource final : public pipeline::Source {
 public:
  PostgresSource(std::string url, Options options, const pipeline::EntityDeclaration& entity,
                 const pipeline::RecordDecoder& row_decoder, pipeline::db::RetryPolicy retry = {});
  ~PostgresSource() override;

  const std::string& identity() const override { return identity_; }
  void seek(const pipeline::Position& from) override;
  using pipeline::Source::read;
  std::size_t read(std::vector<pipeline::DecodedRecord>& out, std::size_t max_records,
                   std::size_t max_bytes) override;
  pipeline::Position position() const override;
  bool precedes(const pipeline::Position& earlier, const pipeline::Position& later) const override;
  std::string_view format() const override { return kRowFormat; }

 private:
  struct Column {
    std::string quoted;  // the column's name as an SQL identifier
    std::string field;   // the field it delivers (its name, or the rename's field)
    bool as_text = false;  // delivered as a JSON string: the key and text fields
  };
  struct Row {
    pipeline::DecodedRecord record;
    CursorValues cursor;
  };

  // The cursor values of a position, checked against the cursor's arity (SourceError).
  CursorValues cursor_of(const pipeline::Position& position) const;
  // Reads the catalog, checks the configuration against it and builds the queries.
  void describe_source(pqxx::connection& connection, const pipeline::EntityDeclaration& entity);
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
  // Fetches up to `limit` rows after the position into buffered_; sets exhausted_ when the
  // source has no more for now.
  void fetch(std::size_t limit);

  std::string url_;
  Options options_;
  pipeline::RecordLayout layout_;
  const pipeline::RecordDecoder& decoder_;
  pipeline::db::RetryPolicy retry_;
  std::string identity_;
  std::vector<Column> columns_;            // every column of the relation, in table order
  std::string first_query_;                // from the start
  std::string next_query_;                 // after a cursor tuple
  std::string order_query_;                // whether one cursor tuple lies before another

  std::unique_ptr<pqxx::connection> connection_;  // the reading session; null after a failure
  // precedes() is asked from the commit's thread while read() runs: a session of its own.
  mutable std::mutex order_mutex_;
  mutable std::unique_ptr<pqxx::connection> order_connection_;

  std::optional<CursorValues> last_;  // the cursor of the last row returned; nullopt: the start
  std::deque<Row> buffered_;          // fetched, not yet returned (a batch cut by max_bytes)
  bool exhausted_ = false;            // the last fetch found no more rows for now
};

// A PostgresSource on the database whose URL is in the environment variable options.url_env
// (SourceError naming it when unset).
std::unique_ptr<pipeline::Source> open_postgres_source(const Options& options, const pipeline::EntityDeclaration& entity,
                                                       const pipeline::RecordDecoder& row_decoder,
                                                       pipeline::db::RetryPolicy retry = {});

}  // namespace tidemark::connectors::postgres
