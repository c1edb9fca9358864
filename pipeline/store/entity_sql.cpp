#include "pipeline/store/entity_sql.hpp"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/core/json_value.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline::db {

namespace {

// The stage's own columns, as sql/entity/create_stage.sql names them: like every name the
// templates add to an entity's own, they start with tidemark_, which no declared key,
// revision or field may (check_identifier), so none can shadow a declared column.
constexpr std::string_view kOrd = "tidemark_ord";
constexpr std::string_view kCandidate = "tidemark_candidate";

// jsonb_build_object takes at most 100 arguments (PostgreSQL's FUNC_MAX_ARGS): wider objects
// are built in parts and concatenated, which jsonb's key order makes the same object.
constexpr std::size_t kPairsPerObject = 50;

// A field's value as the payload carries it (docs/entities.md "Decisions"):
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

// One "'name', value" pair per value column (fields, then `extra` when kept), from the
// columns named by `column_of` (the applied version's own, or the stored row's), in
// declaration order.
template <typename ColumnOf>
std::vector<std::string> field_pairs(const EntityDeclaration& entity, std::string_view prefix, ColumnOf column_of) {
  std::vector<std::string> pairs;
  std::size_t index = 0;
  for (const auto& field : entity.fields) {
    pairs.push_back(quote_literal(std::string(prefix) + field.name) + ", " +
                    payload_value(field.type, column_of(index++, field.name)));
  }
  if (entity.extra_fields == ExtraFields::kKeep) {
    pairs.push_back(quote_literal(std::string(prefix) + std::string(kExtraColumn)) + ", " +
                    column_of(index, std::string(kExtraColumn)));
  }
  return pairs;
}

// The stored row's value column `index` under its name in the `stored` step.
std::string previous_column(std::size_t index) { return "tidemark_previous_" + std::to_string(index); }

// The applied version's own column `name` and the stored row's column `index`, in the
// log step's `e`.
std::string applied_column(std::size_t, const std::string& name) { return "e." + quote_identifier(name); }
std::string stored_column(std::size_t index, const std::string&) { return "e." + previous_column(index); }

// The payload's envelope (docs/entities.md): {event_id, pipeline, entity, key,
// revision, partition, sequence, fields, previous: null | {revision, fields}}, as logged:
// without event_id and sequence, a destination's, which its reader adds
// (tidemark_event_payload; jsonb orders keys itself, so the object is the same).
std::string entity_payload(const EntityDeclaration& entity) {
  const std::string key = quote_identifier(entity.key);
  const std::string revision = quote_identifier(entity.revision);
  return build_object({
      "'pipeline', $1::text",
      "'entity', " + quote_literal(entity.name) + "::text",
      "'key', e." + key,
      "'revision', e." + revision,
      "'partition', e.tidemark_partition",
      "'fields', " + build_object(field_pairs(entity, "", applied_column)),
      "'previous', CASE WHEN e.tidemark_stored_revision IS NULL THEN NULL\n"
      "                 ELSE jsonb_build_object('revision', e.tidemark_stored_revision,\n"
      "                                         'fields', " +
          build_object(field_pairs(entity, "", stored_column)) + ") END",
  });
}

// The built-in entity's legacy envelope: one flat object of the event id, the pipeline, the
// key and revision under their own names, each field under its name and the stored row's
// under previous_<name> (null when there is none), and the sequence; logged, like
// entity_payload, without the event id and the sequence.
std::string legacy_payload(const EntityDeclaration& entity) {
  std::vector<std::string> pairs = {
      "'pipeline', $1::text",
      quote_literal(entity.key) + ", e." + quote_identifier(entity.key),
      quote_literal(entity.revision) + ", e." + quote_identifier(entity.revision),
  };
  for (auto& pair : field_pairs(entity, "", applied_column)) pairs.push_back(std::move(pair));
  for (auto& pair : field_pairs(entity, "previous_", stored_column)) pairs.push_back(std::move(pair));
  return build_object(pairs);
}

// A value column as text in its canonical form (field_value.hpp), the form the checker gives
// a record's value, so that a stored row's values compare with a record's as text.
std::string canonical_text(FieldType type, const std::string& expression) {
  switch (type) {
    case FieldType::kDecimal:
    case FieldType::kTimestamp:
    case FieldType::kDate:
      return payload_value(type, expression);
    case FieldType::kText:
      return expression;
    case FieldType::kInteger:
    case FieldType::kBoolean:
    case FieldType::kJson:
      break;
  }
  return expression + "::text";
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

// `text` (a statement of sql/) without its leading comment lines and final newline: a
// statement as a user would type it, for a message.
std::string_view without_comments(std::string_view text) {
  while (text.starts_with("--")) {
    const auto end = text.find('\n');
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  return text;
}

// What a column type holds, as far as column_change needs to know: how many digits before
// and after the point every value fits in, for the number types.
struct Holds {
  enum class Kind { kOther, kText, kVarchar, kInteger, kNumeric, kAnyNumeric } kind = Kind::kOther;
  int integer_digits = 0;  // kInteger: of its largest value; kNumeric: precision - scale
  int scale = 0;           // kNumeric
};

// `type` as format_type spells it: "numeric(10,3)", "bigint", "character varying(64)".
Holds holds(std::string_view type) {
  using Kind = Holds::Kind;
  if (type == "text") return {Kind::kText};
  if (type.starts_with("character varying")) return {Kind::kVarchar};
  if (type == "smallint") return {Kind::kInteger, 5};   // 32767
  if (type == "integer") return {Kind::kInteger, 10};   // 2147483647
  if (type == "bigint") return {Kind::kInteger, 19};    // 9223372036854775807
  if (type == "numeric") return {Kind::kAnyNumeric};
  constexpr std::string_view kNumeric = "numeric(";
  if (!type.starts_with(kNumeric) || !type.ends_with(")")) return {};
  const auto comma = type.find(',');
  int precision = 0;
  int scale = 0;
  const char* end = type.data() + type.size() - 1;
  if (comma == std::string_view::npos ||
      std::from_chars(type.data() + kNumeric.size(), type.data() + comma, precision).ec != std::errc() ||
      std::from_chars(type.data() + comma + 1, end, scale).ec != std::errc()) {
    return {};
  }
  return {Kind::kNumeric, precision - scale, scale};
}

bool is_number(const Holds& type) {
  return type.kind == Holds::Kind::kInteger || type.kind == Holds::Kind::kNumeric ||
         type.kind == Holds::Kind::kAnyNumeric;
}

// Every whole number of up to this many digits fits bigint.
constexpr int kBigintWholeDigits = 18;

// Why changing `from` (spelt `is`) into `to` (declared as `declared`) keeps every value, or
// what it could lose; `automatic` says which.
std::string change_reason(const Holds& from, const Holds& to, const std::string& is, const EntityColumn& declared,
                          bool& automatic) {
  using Kind = Holds::Kind;
  const auto digits = [](int count) { return std::to_string(count) + (count == 1 ? " digit" : " digits"); };
  automatic = false;
  if (to.kind == Kind::kNumeric && from.kind == Kind::kNumeric) {
    if (from.scale > to.scale) {
      return "fewer digits after the point (" + std::to_string(to.scale) + ", was " + std::to_string(from.scale) +
             "): PostgreSQL would round every stored value to " + digits(to.scale);
    }
    if (from.integer_digits > to.integer_digits) {
      return "fewer digits before the point (" + std::to_string(to.integer_digits) + ", was " +
             std::to_string(from.integer_digits) + "): a stored value with more would make it fail";
    }
    automatic = true;
    return from.scale == to.scale ? "more digits, the same scale: every stored value fits as it is"
                                  : "as many digits before the point or more, more after it: every stored value fits, "
                                    "with zeros appended";
  }
  if (to.kind == Kind::kNumeric && from.kind == Kind::kInteger) {
    if (from.integer_digits > to.integer_digits) {
      return "an integer of up to " + digits(from.integer_digits) + " into " + digits(to.integer_digits) +
             " before the point: a stored value with more would make it fail";
    }
    automatic = true;
    return "every " + is + " value fits in " + digits(to.integer_digits) + " before the point";
  }
  if (to.kind == Kind::kNumeric && from.kind == Kind::kAnyNumeric) {
    return "a numeric of any size into " + digits(to.integer_digits) + " before the point and " + digits(to.scale) +
           " after it: PostgreSQL would round stored values, and one with more digits before the point would make "
           "it fail";
  }
  if (to.kind == Kind::kInteger && from.kind == Kind::kInteger) {
    automatic = from.integer_digits <= to.integer_digits;
    return automatic ? "every " + is + " value fits " + declared.type : "a stored value beyond its range would fail";
  }
  if (to.kind == Kind::kInteger && (from.kind == Kind::kNumeric || from.kind == Kind::kAnyNumeric)) {
    if (from.kind == Kind::kAnyNumeric || from.scale > 0) {
      return "a decimal into an integer: PostgreSQL would round every stored fraction to a whole number";
    }
    if (from.integer_digits > kBigintWholeDigits) {
      return "a stored value beyond bigint's range (more than 9223372036854775807) would make it fail";
    }
    automatic = true;
    return "every whole number of up to " + digits(from.integer_digits) + " fits bigint";
  }
  if (to.kind == Kind::kText && from.kind == Kind::kVarchar) {
    automatic = true;
    return "every varchar is a text as it is";
  }
  if (from.kind == Kind::kText || from.kind == Kind::kVarchar) {
    return "text into " + declared.config_type + ": a stored value that is not one would make it fail";
  }
  if (to.kind == Kind::kText) {
    return is + " into text: stored values would become PostgreSQL's text form of them, which need not be the form "
                "the records carry, so an unchanged record could conflict with its own row";
  }
  return is + " into " + declared.config_type + ": not a change that keeps every stored value as it is";
}

}  // namespace

std::string fill(std::string_view text, const Placeholders& values) {
  std::string out;
  std::size_t at = 0;
  for (auto open = text.find("{{"); open != std::string_view::npos; open = text.find("{{", at)) {
    const auto close = text.find("}}", open);
    const auto name = close == std::string_view::npos ? text.substr(open) : text.substr(open + 2, close - open - 2);
    const auto value = std::find_if(values.rbegin(), values.rend(), [&](const auto& v) { return v.first == name; });
    if (value == values.rend()) throw std::logic_error("sql/: no value for placeholder " + std::string(name));
    out += text.substr(at, open - at);
    out += value->second;
    at = close + 2;
  }
  out += text.substr(at);
  return out;
}

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
  std::string out = "{\"table\":" + json_quoted(entity.table) + ",\"key\":" + json_quoted(entity.key) +
                    ",\"revision\":" + json_quoted(entity.revision) +
                    ",\"partition_by\":" + json_quoted(entity.partition_by) +
                    ",\"extra_fields\":" + json_quoted(to_string(entity.extra_fields)) + ",\"fields\":[";
  for (std::size_t i = 0; i < entity.fields.size(); ++i) {
    const auto& field = entity.fields[i];
    if (i > 0) out += ",";
    out += "{\"name\":" + json_quoted(field.name) + ",\"type\":" + json_quoted(to_string(field.type)) +
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
  const std::string key = quote_identifier(entity.key);
  EntitySql out;
  out.stage_table = "tidemark_stage_" + entity.name;
  out.stage_columns = {std::string(kOrd), entity.key, entity.revision};
  for (const auto& column : columns) out.stage_columns.push_back(column.name);
  out.stage_columns.emplace_back(kCandidate);

  std::string typed;        // ,\n  "c" type
  std::string quoted;       // , "c"
  std::string previous;     // ,\n         t."c" AS tidemark_previous_<i>
  std::string assignments;  // ,\n         "c" = EXCLUDED."c"
  std::vector<std::string> stored;  // t."c"
  std::vector<std::string> staged;  // s."c"
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const std::string name = quote_identifier(columns[i].name);
    typed += ",\n  " + name + " " + columns[i].type;
    quoted += ", " + name;
    previous += ",\n         t." + name + " AS " + previous_column(i);
    assignments += ",\n         " + name + " = EXCLUDED." + name;
    stored.push_back("t." + name);
    staged.push_back("s." + name);
  }
  const Placeholders names = {
      {"table", quote_identifier(entity.table)},
      {"stage", quote_identifier(out.stage_table)},
      {"key", key},
      {"revision", quote_identifier(entity.revision)},
      {"columns", typed},
  };
  out.create_table = fill(sql::kEntityCreateTable, names);
  out.create_stage = fill(sql::kEntityCreateStage, names);

  // Same revision and a different payload is a conflict (docs/rules.md rule 2): every field
  // and `extra`, compared as stored (canonical per type: numeric at its scale, jsonb by value).
  const std::string differs =
      columns.empty() ? "false" : "ROW(" + join(stored, ", ") + ") IS DISTINCT FROM ROW(" + join(staged, ", ") + ")";
  // The partition: the partition_by field's value as text, the key when it is absent (the
  // sequence counters' partition_key is NOT NULL).
  const std::string partition =
      entity.partition_by == entity.key || entity.partition_by.empty()
          ? "c." + key
          : "COALESCE(c." + quote_identifier(entity.partition_by) + "::text, c." + key + ")";
  // Only for conflicts: the stored row's value columns in canonical form, for the detail.
  std::string conflict_columns;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const FieldType type = i < entity.fields.size() ? entity.fields[i].type : FieldType::kJson;
    conflict_columns += ",\n       CASE WHEN tidemark_conflict THEN " + canonical_text(type, previous_column(i)) + " END";
  }
  const bool legacy = uses_legacy_envelope(entity);
  const std::string revision = quote_identifier(entity.revision);
  Placeholders apply = names;
  apply.insert(apply.end(), {
                                {"previous", previous},
                                {"differs", differs},
                                {"columns", quoted},
                                {"assignments", assignments},
                                {"partition", partition},
                                {"conflict_columns", conflict_columns},
                                {"pipeline_column", quote_identifier(legacy ? "pipeline" : kPipelineColumn)},
                                {"updated_column", quote_identifier(legacy ? "updated_at" : kUpdatedAtColumn)},
                                {"entity", quote_literal(entity.name)},
                                // <key>:<revision> (legacy), <entity>:<key>:<revision>: the idempotency
                                // key without '<destination>:', which its reader prefixes
                                {"event_key", (legacy ? std::string() : quote_literal(entity.name) + " || ':' || ") +
                                                  "e." + key + " || ':' || e." + revision},
                                {"payload", legacy ? legacy_payload(entity) : entity_payload(entity)},
                            });
  out.apply_batch = fill(sql::kEntityApplyBatch, apply);
  return out;
}

std::optional<ColumnChange> column_change(const std::string& table, const EntityColumn& declared,
                                          const std::string& is) {
  if (is == declared.type) return std::nullopt;
  const Holds from = holds(is);
  const Holds to = holds(declared.type);
  ColumnChange change;
  change.reason = change_reason(from, to, is, declared, change.automatic);
  // Between number types and into text PostgreSQL converts on its own (an assignment cast);
  // any other change needs the conversion spelt out.
  const bool needs_using = !(is_number(from) && is_number(to)) && to.kind != Holds::Kind::kText;
  const std::string column = quote_identifier(declared.name);
  change.statement = fill(without_comments(sql::kEntityAlterColumnType), {{"table", quote_identifier(table)},
                                                        {"column", column},
                                                        {"type", declared.type},
                                                        {"using", needs_using ? " USING " + column + "::" +
                                                                                    declared.type
                                                                              : std::string()}});
  return change;
}

}  // namespace tidemark::pipeline::db
