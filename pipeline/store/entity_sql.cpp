#include "pipeline/store/entity_sql.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace tidemark::pipeline::db {

namespace {

// The names the generated statements add to an entity's own: every one starts with
// tidemark_, which no declared key, revision or field may (check_identifier), so none can
// shadow a declared column.
constexpr std::string_view kOrd = "tidemark_ord";
constexpr std::string_view kCandidate = "tidemark_candidate";

// jsonb_build_object takes at most 100 arguments (PostgreSQL's FUNC_MAX_ARGS): wider objects
// are built in parts and concatenated, which jsonb's key order makes the same object.
constexpr std::size_t kPairsPerObject = 50;

std::string escape_json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      constexpr std::string_view kHex = "0123456789abcdef";
      out += "\\u00";
      out += kHex[static_cast<unsigned char>(c) >> 4];
      out += kHex[static_cast<unsigned char>(c) & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A field's value as the payload carries it (INTERFACE.md "Entities", "Decisions"):
// decimals as strings at the declared scale (numeric's text form keeps the column's scale),
// timestamps in UTC with microseconds, dates as YYYY-MM-DD whatever the session's DateStyle,
// integers, booleans and json as their JSON values; NULL stays null.
std::string payload_value(FieldType type, const std::string& expression) {
  switch (type) {
    case FieldType::kDecimal:
      return expression + "::text";
    case FieldType::kTimestamp:
      return "to_char(" + expression + " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')";
    case FieldType::kDate:
      return "to_char(" + expression + ", 'YYYY-MM-DD')";
    case FieldType::kText:
    case FieldType::kInteger:
    case FieldType::kBoolean:
    case FieldType::kJson:
      break;
  }
  return expression;
}

// jsonb_build_object over `pairs` ("'name', value"), in parts of kPairsPerObject.
std::string build_object(const std::vector<std::string>& pairs) {
  if (pairs.empty()) return "'{}'::jsonb";
  std::string out;
  for (std::size_t i = 0; i < pairs.size(); i += kPairsPerObject) {
    if (i > 0) out += "\n           || ";
    out += "jsonb_build_object(";
    for (std::size_t j = i; j < pairs.size() && j < i + kPairsPerObject; ++j) {
      if (j > i) out += ",\n             ";
      out += pairs[j];
    }
    out += ")";
  }
  return out;
}

// The payload's `fields` object from the columns named by `column_of` (the applied
// version's own, or the stored row's), in declaration order.
template <typename ColumnOf>
std::string fields_object(const EntityDeclaration& entity, ColumnOf column_of) {
  std::vector<std::string> pairs;
  std::size_t index = 0;
  for (const auto& field : entity.fields) {
    pairs.push_back(quote_literal(field.name) + ", " + payload_value(field.type, column_of(index++, field.name)));
  }
  if (entity.extra_fields == ExtraFields::kKeep) {
    pairs.push_back(quote_literal(kExtraColumn) + ", " + column_of(index, std::string(kExtraColumn)));
  }
  return build_object(pairs);
}

// The stored row's value column `index` under its name in the `stored` step.
std::string previous_column(std::size_t index) { return "tidemark_previous_" + std::to_string(index); }

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

}  // namespace

std::string quote_identifier(std::string_view name) {
  std::string out = "\"";
  for (const char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string quote_literal(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

std::string column_type(const FieldSpec& spec) {
  switch (spec.type) {
    case FieldType::kText:
      return "text";
    case FieldType::kInteger:
      return "bigint";
    case FieldType::kDecimal:
      return "numeric(" + std::to_string(spec.precision) + "," + std::to_string(spec.scale) + ")";
    case FieldType::kTimestamp:
      return "timestamp with time zone";
    case FieldType::kDate:
      return "date";
    case FieldType::kBoolean:
      return "boolean";
    case FieldType::kJson:
      return "jsonb";
  }
  return "text";  // only a value cast from outside the enumerators
}

std::string config_type(const FieldSpec& spec) {
  if (spec.type == FieldType::kDecimal) {
    return "decimal(" + std::to_string(spec.precision) + "," + std::to_string(spec.scale) + ")";
  }
  return std::string(to_string(spec.type));
}

std::vector<EntityColumn> value_columns(const EntityDeclaration& entity) {
  std::vector<EntityColumn> columns;
  for (const auto& field : entity.fields) columns.push_back({field.name, column_type(field), config_type(field)});
  if (entity.extra_fields == ExtraFields::kKeep) {
    columns.push_back({std::string(kExtraColumn), "jsonb", "json (extra_fields: keep)"});
  }
  return columns;
}

std::string definition_json(const EntityDeclaration& entity) {
  std::string out = "{\"table\":" + escape_json_string(entity.table) + ",\"key\":" + escape_json_string(entity.key) +
                    ",\"revision\":" + escape_json_string(entity.revision) +
                    ",\"partition_by\":" + escape_json_string(entity.partition_by) +
                    ",\"extra_fields\":" + escape_json_string(to_string(entity.extra_fields)) + ",\"fields\":[";
  for (std::size_t i = 0; i < entity.fields.size(); ++i) {
    const auto& field = entity.fields[i];
    if (i > 0) out += ",";
    out += "{\"name\":" + escape_json_string(field.name) + ",\"type\":" + escape_json_string(to_string(field.type)) +
           ",\"required\":" + (field.required ? "true" : "false");
    if (field.type == FieldType::kText) out += ",\"max_length\":" + std::to_string(field.max_length);
    if (field.type == FieldType::kDecimal) {
      out += ",\"precision\":" + std::to_string(field.precision) + ",\"scale\":" + std::to_string(field.scale);
    }
    out += "}";
  }
  return out + "]}";
}

EntitySql build_entity_sql(const EntityDeclaration& entity) {
  const auto columns = value_columns(entity);
  const std::string table = quote_identifier(entity.table);
  const std::string key = quote_identifier(entity.key);
  const std::string revision = quote_identifier(entity.revision);
  EntitySql out;

  // The table: field columns nullable, as `required` is enforced by validation (INTERFACE
  // "Decisions": removing a required field never breaks a later load).
  out.create_table =
      "CREATE TABLE " + table + " (\n  " + key + " text PRIMARY KEY,\n  " + revision + " bigint NOT NULL";
  for (const auto& column : columns) out.create_table += ",\n  " + quote_identifier(column.name) + " " + column.type;
  out.create_table += ",\n  " + quote_identifier(kPipelineColumn) + " text,\n  " + quote_identifier(kUpdatedAtColumn) +
         " timestamptz\n)";

  out.stage_table = "tidemark_stage_" + entity.name;
  const std::string stage = quote_identifier(out.stage_table);
  out.stage_columns = {std::string(kOrd), entity.key, entity.revision};
  for (const auto& column : columns) out.stage_columns.push_back(column.name);
  out.stage_columns.emplace_back(kCandidate);
  // As sql/commit/create_stage.sql: ON COMMIT DELETE ROWS empties it at the end of every
  // batch transaction.
  out.create_stage = "CREATE TEMP TABLE IF NOT EXISTS " + stage + " (\n  " + quote_identifier(kOrd) +
                     " int NOT NULL,\n  " + key + " text NOT NULL,\n  " + revision + " bigint NOT NULL";
  for (const auto& column : columns) out.create_stage += ",\n  " + quote_identifier(column.name) + " " + column.type;
  out.create_stage += ",\n  " + quote_identifier(kCandidate) + " boolean NOT NULL\n) ON COMMIT DELETE ROWS";

  std::vector<std::string> quoted;        // the value columns
  std::vector<std::string> staged;        // s."c"
  std::vector<std::string> stored;        // t."c"
  std::vector<std::string> previous;      // t."c" AS tidemark_previous_<i>
  std::vector<std::string> assignments;   // "c" = EXCLUDED."c"
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const std::string name = quote_identifier(columns[i].name);
    quoted.push_back(name);
    staged.push_back("s." + name);
    stored.push_back("t." + name);
    previous.push_back("t." + name + " AS " + previous_column(i));
    assignments.push_back(name + " = EXCLUDED." + name);
  }
  // Same revision and a different payload is a conflict (docs/rules.md rule 2): every field
  // and `extra`, compared as stored (canonical per type: numeric at its scale, jsonb by value).
  const std::string differs = columns.empty() ? "false"
                                              : "ROW(" + join(stored, ", ") + ") IS DISTINCT FROM ROW(" +
                                                    join(staged, ", ") + ")";
  // The partition: the partition_by field's value as text, the key when it is absent (the
  // sequence counters' partition_key is NOT NULL).
  const std::string partition =
      entity.partition_by == entity.key || entity.partition_by.empty()
          ? "c." + key
          : "COALESCE(c." + quote_identifier(entity.partition_by) + "::text, c." + key + ")";
  const std::string with_columns = quoted.empty() ? "" : ", " + join(quoted, ", ");

  std::string& sql = out.apply_batch;
  sql = "-- Generated from entity " + quote_literal(entity.name) +
        " (pipeline/store/entity_sql.cpp), step for step as sql/commit/apply_batch.sql.\n";
  sql += "WITH stored AS (\n  SELECT s.*, t." + revision + " AS tidemark_stored_revision";
  for (const auto& column : previous) sql += ",\n         " + column;
  sql += ",\n         COALESCE(t." + revision + " = s." + revision + " AND " + differs +
         ", false) AS tidemark_conflict\n    FROM " + stage + " s\n    LEFT JOIN " + table + " t ON t." + key +
         " = s." + key + "\n),\n";
  sql += "changes AS (\n  SELECT * FROM stored\n   WHERE tidemark_candidate AND NOT tidemark_conflict\n     AND "
         "(tidemark_stored_revision IS NULL OR tidemark_stored_revision < " +
         revision + ")\n),\n";
  sql += "upserted AS (\n  INSERT INTO " + table + " AS current_state\n         (" + key + ", " + revision +
         with_columns + ", " + quote_identifier(kPipelineColumn) + ", " + quote_identifier(kUpdatedAtColumn) +
         ")\n  SELECT " + key + ", " + revision + with_columns + ", $1, now() FROM changes\n  ON CONFLICT (" + key +
         ") DO UPDATE\n     SET " + revision + " = EXCLUDED." + revision;
  for (const auto& assignment : assignments) sql += ",\n         " + assignment;
  sql += ",\n         " + quote_identifier(kPipelineColumn) + " = EXCLUDED." + quote_identifier(kPipelineColumn) +
         ",\n         " + quote_identifier(kUpdatedAtColumn) + " = now()\n";
  sql += "     -- revision filter: replays and stale revisions are no-ops (docs/rules.md rule 3)\n";
  sql += "   WHERE EXCLUDED." + revision + " > current_state." + revision + "\n  RETURNING " + key +
         ", xmax = 0 AS tidemark_inserted  -- xmax is 0 only on a row this statement inserted\n),\n";
  sql += "-- Every change was upserted, and inserted exactly when the snapshot saw no stored row.\n";
  sql += "verified AS (\n  SELECT CASE WHEN surprises > 0 THEN tidemark_concurrent_write(surprises) ELSE true END AS "
         "tidemark_ok\n    FROM (SELECT (SELECT count(*) FROM changes) - count(*) AS surprises\n            FROM "
         "upserted u JOIN changes c USING (" +
         key + ")\n           WHERE u.tidemark_inserted = (c.tidemark_stored_revision IS NULL)) s\n),\n";
  sql += "applied AS (\n  SELECT c.*, " + partition + " AS tidemark_partition,\n";
  sql += "         row_number() OVER (PARTITION BY " + partition + " ORDER BY c.tidemark_ord) AS tidemark_nth,\n";
  sql += "         count(*) OVER (PARTITION BY " + partition + ") AS tidemark_in_batch\n";
  sql += "    FROM changes c\n    JOIN upserted USING (" + key + ")\n),\n";
  sql += "sequenced AS (\n  INSERT INTO tidemark_destination_sequence AS seq (destination, partition_key, "
         "last_sequence)\n  SELECT d.destination, a.tidemark_partition, count(*)\n    FROM applied a CROSS JOIN "
         "unnest($2::text[]) AS d(destination)\n   GROUP BY d.destination, a.tidemark_partition\n  ON CONFLICT "
         "(destination, partition_key) DO UPDATE SET last_sequence = seq.last_sequence + EXCLUDED.last_sequence\n  "
         "RETURNING destination, partition_key, last_sequence\n),\n";
  const std::string fields_now = fields_object(entity, [&](std::size_t, const std::string& name) {
    return "e." + quote_identifier(name);
  });
  const std::string fields_before =
      fields_object(entity, [&](std::size_t index, const std::string&) { return "e." + previous_column(index); });
  sql += "outboxed AS (\n  INSERT INTO outbox (destination, idempotency_key, partition_key, sequence, payload)\n  "
         "SELECT d.destination, e.tidemark_event_id, e.tidemark_partition, e.tidemark_sequence,\n         "
         "jsonb_build_object(\n           'event_id', e.tidemark_event_id,\n           'pipeline', $1::text,\n"
         "           'entity', " +
         quote_literal(entity.name) + "::text,\n           'key', e." + key + ",\n           'revision', e." +
         revision +
         ",\n           'partition', e.tidemark_partition,\n           'sequence', e.tidemark_sequence,\n"
         "           'fields', " +
         fields_now +
         ",\n           'previous', CASE WHEN e.tidemark_stored_revision IS NULL THEN NULL ELSE\n"
         "             jsonb_build_object('revision', e.tidemark_stored_revision, 'fields', " +
         fields_before + ") END)\n";
  sql += "    FROM unnest($2::text[]) AS d(destination)\n   CROSS JOIN LATERAL (\n     SELECT a.*, d.destination || "
         "':' || " +
         quote_literal(entity.name) + " || ':' || a." + key + " || ':' || a." + revision +
         " AS tidemark_event_id,\n            s.last_sequence - a.tidemark_in_batch + a.tidemark_nth AS "
         "tidemark_sequence\n       FROM applied a\n       JOIN sequenced s ON s.destination = d.destination AND "
         "s.partition_key = a.tidemark_partition) e\n   ORDER BY e.tidemark_ord, d.destination\n";
  sql += "  -- a replay cannot create a second effect (docs/rules.md rule 6)\n  ON CONFLICT (idempotency_key) DO "
         "NOTHING\n  RETURNING 1\n)\n";
  sql += "SELECT tidemark_ord AS ord,\n       CASE WHEN tidemark_conflict THEN 'conflict'\n            WHEN "
         "tidemark_stored_revision IS NULL THEN 'inserted'\n            WHEN tidemark_stored_revision < " +
         revision + " THEN 'updated'\n            WHEN tidemark_stored_revision = " + revision +
         " THEN 'unchanged'\n            ELSE 'stale' END AS verdict,\n       (SELECT count(*) FROM outboxed) AS "
         "outbox_rows\n  FROM stored, verified\n WHERE verified.tidemark_ok AND (tidemark_conflict OR "
         "tidemark_candidate)";
  return out;
}

}  // namespace tidemark::pipeline::db
