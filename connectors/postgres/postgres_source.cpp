#include "connectors/postgres/postgres_source.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <utility>

#include "pipeline/core/json_value.hpp"
#include "pipeline/core/validate.hpp"
#include "pipeline/store/pg/pg_text.hpp"
#include "pipeline/store/pg/row.hpp"
#include "sql/statements.hpp"

namespace tidemark::connectors::postgres {

namespace {

namespace db = pipeline::db;

// A row of sql/postgres_source/relation.sql.
struct Relation {
  std::string oid;
  std::string kind;  // pg_class.relkind
  std::string quoted_name;
  static Relation read(const db::Row& row) {
    return {row.text("oid"), row.text("kind"), row.text("quoted_name")};
  }
};

// A row of sql/postgres_source/columns.sql.
struct CatalogColumn {
  std::string name, quoted, type;
  std::string collation;  // "" for none
  bool not_null = false;
  static CatalogColumn read(const db::Row& row) {
    return {row.text("name"), row.text("quoted_name"), row.text("type"), row.text("collation"),
            row.get<bool>("not_null")};
  }
};

// The source's session, with the fixed settings of sql/postgres_source/session.sql.
std::unique_ptr<pqxx::connection> open_session(const std::string& url) {
  auto connection = db::connect(url);
  pqxx::nontransaction setup(*connection);
  setup.exec(std::string(sql::kPostgresSourceSession));
  setup.commit();
  return connection;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

bool is_timestamp(const std::string& type) {
  return type == "timestamp with time zone" || type == "timestamp without time zone";
}

}  // namespace

PostgresSource::PostgresSource(std::string url, Options options, const pipeline::EntityDeclaration& entity,
                               const pipeline::RecordDecoder& row_decoder, db::RetryPolicy retry)
    : url_(std::move(url)),
      options_(std::move(options)),
      layout_(pipeline::record_layout(entity)),
      decoder_(row_decoder),
      retry_(retry) {
  identity_ = "postgres:" + options_.table + "(";
  for (std::size_t i = 0; i < options_.cursor.size(); ++i) identity_ += (i > 0 ? "," : "") + options_.cursor[i];
  identity_ += ")";
  try {
    db::with_retries(retry_, "opening the postgres source " + options_.table, [&] {
      connection_.reset();
      connection_ = open_session(url_);
      describe_source(*connection_, entity);
    });
  } catch (const pqxx::sql_error& error) {
    throw pipeline::SourceError("the postgres source " + options_.table + " cannot be read: " + error.what());
  } catch (const db::InvalidDatabaseUrl& error) {
    fail("url_env", "the URL in " + options_.url_env + " is not a PostgreSQL URL: " + error.what());
  }
}

PostgresSource::~PostgresSource() = default;

void PostgresSource::fail(const std::string& key, const std::string& problem) const {
  throw pipeline::SourceError((options_.origin.empty() ? std::string("source") : options_.origin) + "." + key + ": " +
                              problem);
}

void PostgresSource::describe_source(pqxx::connection& connection, const pipeline::EntityDeclaration& entity) {
  // Afresh on every attempt: a retry after an outage must not add the columns twice.
  columns_.clear();
  pqxx::read_transaction txn(connection);
  const auto relation =
      db::read_first<Relation>(txn.exec_params(std::string(sql::kPostgresSourceRelation), options_.table));
  if (!relation) {
    fail("table", "no table or view " + options_.table + " in the source database (or this role cannot see it)");
  }
  const std::string& oid = relation->oid;
  const char kind = relation->kind.front();
  const std::string& quoted_relation = relation->quoted_name;
  const bool table = kind == 'r' || kind == 'p';
  if (!table && kind != 'v' && kind != 'm' && kind != 'f') {
    fail("table", options_.table + " is not a table or a view");
  }
  if (options_.consistency == Consistency::kSnapshot && !table) {
    fail("consistency", "snapshot reads tables only (it compares each row's xmin), and " + options_.table +
                            " is a view: use the default safety_lag, or read the table itself");
  }

  const auto catalog = db::read_all<CatalogColumn>(txn.exec_params(std::string(sql::kPostgresSourceColumns), oid));
  std::vector<std::string> names;
  for (const auto& column : catalog) names.push_back(column.name);
  const auto find = [&](const std::string& name) -> const CatalogColumn* {
    for (const auto& column : catalog) {
      if (column.name == name) return &column;
    }
    return nullptr;
  };

  // The cursor: existing columns, never NULL, unique together (checked where the catalog can tell).
  std::vector<const CatalogColumn*> cursor;
  for (const auto& name : options_.cursor) {
    const auto* column = find(name);
    if (column == nullptr) fail("cursor", "no column " + name + " in " + options_.table + " (columns: " + joined(names) + ")");
    if (table && !column->not_null) {
      fail("cursor", "column " + name + " of " + options_.table +
                         " may be NULL, and keyset reading never reaches a row whose cursor is NULL: make it NOT NULL "
                         "or take another column");
    }
    cursor.push_back(column);
  }
  if (table && !db::Row(txn.exec_params(std::string(sql::kPostgresSourceCursorIsUnique), oid,
                                        db::text_array_literal(options_.cursor))
                           .at(0))
                    .get<bool>("is_unique")) {
    fail("cursor", "(" + joined(options_.cursor) + ") is not unique in " + options_.table +
                       " (no unique index on cursor columns only), so rows sharing a cursor value could be skipped "
                       "between batches: end the cursor with a unique column, e.g. the primary key");
  }
  if (options_.consistency == Consistency::kSafetyLag && !is_timestamp(cursor.front()->type)) {
    fail("cursor", "safety_lag (the default consistency) needs a timestamp as the first cursor column, and " +
                       cursor.front()->name + " is " + cursor.front()->type +
                       ": put a timestamp first (e.g. [updated_at, id]) or set consistency: snapshot");
  }

  // Column -> field: by name, or by the rename that names the column.
  for (const auto& [field, column] : options_.columns) {
    if (find(column) == nullptr) {
      fail("columns." + field, "no column " + column + " in " + options_.table + " (columns: " + joined(names) + ")");
    }
  }
  std::set<std::string> fields;
  for (const auto& column : catalog) {
    std::string field = column.name;
    for (const auto& [renamed, source] : options_.columns) {
      if (source == column.name) field = renamed;
    }
    if (!fields.insert(field).second) {
      fail("columns." + field, "field " + field + " would come from two columns of " + options_.table +
                                   " (one is named " + field + "): rename that one as well");
    }
    const auto index = layout_.index(field);
    const bool text = index && (*index == pipeline::kKeyField ||
                                (entity.field(field) != nullptr && entity.field(field)->type == pipeline::FieldType::kText));
    columns_.push_back({column.quoted, field, text});
  }
  for (std::size_t i = 0; i < layout_.names.size(); ++i) {
    if (layout_.required[i] && !fields.contains(layout_.names[i])) {
      fail("columns", "field " + layout_.names[i] + " of entity " + entity.name + " has no column: " + options_.table +
                          " has none named " + layout_.names[i] + " (columns: " + joined(names) +
                          "); map one with columns: {" + layout_.names[i] + ": COLUMN}");
    }
  }
  txn.commit();

  // The queries. Cursor values as text (their canonical form); every column as its JSON, the
  // server's own conversion: numeric keeps its exact digits, timestamptz is ISO 8601 in UTC
  // (the session's TimeZone), json stays JSON. Text fields and the key get the column's text.
  std::string select = "SELECT ";
  for (const auto* column : cursor) select += "t." + column->quoted + "::text, ";
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const auto& column = columns_[i];
    select += (i > 0 ? ", " : "") + (column.as_text ? "to_jsonb(t." + column.quoted + "::text)::text"
                                                    : "to_jsonb(t." + column.quoted + ")::text");
  }
  const std::size_t arity = cursor.size();
  std::string order = " ORDER BY ";
  std::string tuple = "(";
  std::string values = "(";
  std::string earlier = "ROW(";
  std::string later = "ROW(";
  for (std::size_t i = 0; i < arity; ++i) {
    const std::string separator = i > 0 ? ", " : "";
    order += separator + "t." + cursor[i]->quoted;
    tuple += separator + "t." + cursor[i]->quoted;
    values += separator + "$" + std::to_string(i + 1) + "::" + cursor[i]->type;
    const std::string collate = cursor[i]->collation.empty() ? "" : " COLLATE " + cursor[i]->collation;
    earlier += separator + "$" + std::to_string(i + 1) + "::" + cursor[i]->type + collate;
    later += separator + "$" + std::to_string(arity + i + 1) + "::" + cursor[i]->type + collate;
  }
  tuple += ")";
  values += ")";
  // `after` cursor values come first ($1..$n); then the protection (the lag, or the
  // snapshot's xmin) and the limit.
  const auto query = [&](std::size_t after) {
    const std::string protection = "$" + std::to_string(after + 1);
    std::string text = select;
    std::string guard;
    if (options_.consistency == Consistency::kSnapshot) {
      // Whether the row's inserting transaction is older than every transaction still open.
      text += ", age(t.xmin) > age(" + protection + "::xid)";
    } else {
      guard = " AND t." + cursor.front()->quoted + " <= now() - " + protection + "::interval";
    }
    text += " FROM " + quoted_relation + " AS t WHERE " + (after > 0 ? tuple + " > " + values : "true") + guard +
            order + " LIMIT $" + std::to_string(after + 2);
    return text;
  };
  first_query_ = query(0);
  next_query_ = query(arity);
  order_query_ = "SELECT " + earlier + ") < " + later + ") AS precedes";
}

CursorValues PostgresSource::cursor_of(const pipeline::Position& position) const {
  auto values = parse_cursor(position.text);
  if (!values || values->size() != options_.cursor.size()) {
    throw pipeline::SourceError("position '" + position.text + "' is not a cursor of " + identity_ +
                                " (a JSON array of " + std::to_string(options_.cursor.size()) + " strings)");
  }
  return std::move(*values);
}

void PostgresSource::seek(const pipeline::Position& from) {
  last_ = from.text.empty() ? std::nullopt : std::optional<CursorValues>(cursor_of(from));
  buffered_.clear();
  exhausted_ = false;
}

pipeline::Position PostgresSource::position() const {
  return last_ ? pipeline::Position{format_cursor(*last_)} : pipeline::Position{};
}

void PostgresSource::fetch(std::size_t limit) {
  const bool snapshot = options_.consistency == Consistency::kSnapshot;
  std::vector<std::string> parameters = last_ ? *last_ : CursorValues{};
  const std::size_t protection = parameters.size();
  parameters.emplace_back();  // the lag, or the snapshot's xmin
  parameters.push_back(std::to_string(limit));
  const std::string& query = last_ ? next_query_ : first_query_;
  pqxx::result rows;
  try {
    db::with_retries(retry_, "reading the postgres source " + options_.table, [&] {
      try {
        if (!connection_) connection_ = open_session(url_);
        if (snapshot) {
          // One snapshot for its xmin and the rows it shows.
          pqxx::transaction<pqxx::isolation_level::repeatable_read, pqxx::readwrite_policy::read_only> txn(*connection_);
          parameters[protection] = db::Row(txn.exec(std::string(sql::kPostgresSourceSnapshotXmin)).at(0)).text("xmin");
          rows = txn.exec_params(query, pqxx::prepare::make_dynamic_params(parameters));
          txn.commit();
        } else {
          pqxx::read_transaction txn(*connection_);
          parameters[protection] = std::to_string(options_.safety_lag.count()) + " milliseconds";
          rows = txn.exec_params(query, pqxx::prepare::make_dynamic_params(parameters));
          txn.commit();
        }
      } catch (...) {
        connection_.reset();  // a new session for the next attempt, whatever broke this one
        throw;
      }
    });
  } catch (const pqxx::sql_error& error) {
    throw pipeline::SourceError("the postgres source " + options_.table + " cannot be read after " +
                                stored_position(position()) + ": " + error.what());
  }

  const std::size_t arity = options_.cursor.size();
  std::size_t taken = 0;
  for (const auto& row : rows) {
    // Snapshot: stop before the first row a transaction still open may be followed by.
    if (snapshot && !row[static_cast<int>(arity + columns_.size())].as<bool>()) {
      exhausted_ = true;
      return;
    }
    Row next;
    for (std::size_t i = 0; i < arity; ++i) {
      if (row[static_cast<int>(i)].is_null()) {
        throw pipeline::SourceError("a row of " + options_.table + " has NULL in cursor column " + options_.cursor[i] +
                                    ": keyset reading cannot place it (the view must never give NULL there)");
      }
      next.cursor.emplace_back(row[static_cast<int>(i)].c_str());
    }
    std::string raw = "{";
    for (std::size_t i = 0; i < columns_.size(); ++i) {
      const auto& value = row[static_cast<int>(arity + i)];
      raw += (i > 0 ? "," : "") + pipeline::json_quoted(columns_[i].field) + ":" + (value.is_null() ? "null" : value.c_str());
    }
    raw += '}';
    next.record = decoder_.decode(kRowFormat, "", raw, options_.table + " at " + format_cursor(next.cursor), layout_);
    buffered_.push_back(std::move(next));
    ++taken;
  }
  if (taken < limit) exhausted_ = true;
}

std::size_t PostgresSource::read(std::vector<pipeline::DecodedRecord>& out, std::size_t max_records,
                                 std::size_t max_bytes) {
  if (max_records == 0) return 0;
  if (buffered_.empty() && !exhausted_) fetch(max_records);
  std::size_t count = 0;
  std::size_t bytes = 0;
  while (count < max_records && !buffered_.empty()) {
    Row& row = buffered_.front();
    if (count > 0 && bytes + row.record.raw.size() > max_bytes) break;
    bytes += row.record.raw.size();
    last_ = std::move(row.cursor);
    out.push_back(std::move(row.record));
    buffered_.pop_front();
    ++count;
  }
  return count;
}

bool PostgresSource::precedes(const pipeline::Position& earlier, const pipeline::Position& later) const {
  if (later.text.empty() || later == earlier) return false;
  if (earlier.text.empty()) return true;
  std::vector<std::string> parameters = cursor_of(earlier);
  const CursorValues second = cursor_of(later);
  parameters.insert(parameters.end(), second.begin(), second.end());
  const std::lock_guard lock(order_mutex_);
  bool result = false;
  try {
    db::with_retries(retry_, "ordering positions of the postgres source " + options_.table, [&] {
      try {
        if (!order_connection_) order_connection_ = open_session(url_);
        pqxx::read_transaction txn(*order_connection_);
        result = db::Row(txn.exec_params(order_query_, pqxx::prepare::make_dynamic_params(parameters)).at(0))
                     .get<bool>("precedes");
        txn.commit();
      } catch (...) {
        order_connection_.reset();
        throw;
      }
    });
  } catch (const pqxx::sql_error& error) {
    throw pipeline::SourceError("positions " + earlier.text + " and " + later.text + " of " + identity_ +
                                " cannot be compared: " + error.what());
  }
  return result;
}

std::unique_ptr<pipeline::Source> open_postgres_source(const Options& options, const pipeline::EntityDeclaration& entity,
                                                       const pipeline::RecordDecoder& row_decoder,
                                                       db::RetryPolicy retry) {
  const char* url = std::getenv(options.url_env.c_str());
  if (url == nullptr || *url == '\0') {
    throw pipeline::SourceError((options.origin.empty() ? std::string("source") : options.origin) +
                                ".url_env: environment variable " + options.url_env +
                                " is not set (it must hold the source database's URL)");
  }
  return std::make_unique<PostgresSource>(url, options, entity, row_decoder, retry);
}

}  // namespace tidemark::connectors::postgres
