#include "pipeline/core/entity.hpp"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace tidemark::pipeline {

namespace {

constexpr std::size_t kMaxEntityNameLength = 48;
// PostgreSQL's identifier limit (NAMEDATALEN - 1): a longer name would be cut silently.
constexpr std::size_t kMaxIdentifierLength = 63;
constexpr std::string_view kTidemarkPrefix = "tidemark_";

// Every table sql/migrations/*.sql creates (account_sequence too: 0005 drops it, but a fresh
// database creates it first), and the migrator's own. The unit test checks this list against
// the embedded migrations, so a new migration's table cannot be forgotten here.
constexpr std::array<std::string_view, 11> kMigrationTables = {
    // 0001_initial
    "transaction_state", "quarantine", "account_sequence", "outbox", "runs", "batch_ledger", "checkpoint", "inbox",
    "run_requests",       // 0003_serve
    "views",              // 0004_views
    "schema_migrations",  // sql/migrate: the migrator's own
};
// The views' tables, <prefix><n><suffix>: each version's table (pipeline/views/view.cpp
// table_name), and daily_totals' per-transaction companion of it (migration 0016).
struct ViewTablePattern {
  std::string_view prefix;
  std::string_view suffix;
};
constexpr std::array<ViewTablePattern, 3> kViewTablePatterns = {
    {{"account_balance_v", ""}, {"daily_totals_v", ""}, {"daily_totals_v", "_transactions"}}};

// [a-z][a-z0-9_]{0,max_length-1}
bool is_plain_name(std::string_view name, std::size_t max_length) {
  return !name.empty() && name.size() <= max_length && name.front() >= 'a' && name.front() <= 'z' &&
         std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

DeclarationError error_at(DeclarationPart part, std::string message, std::string field = "") {
  return DeclarationError{part, std::move(field), std::move(message)};
}

// Why `name` may not be a column of `entity` besides its key and revision; nullopt when it may.
std::optional<std::string> column_taken(const EntityDeclaration& entity, std::string_view name) {
  if (name == entity.key) return quoted_name(name) + " is the key field (key and revision are not listed in fields)";
  if (name == entity.revision) {
    return quoted_name(name) + " is the revision field (key and revision are not listed in fields)";
  }
  if (entity.extra_fields == ExtraFields::kKeep && name == kExtraColumn) {
    return quoted_name(name) + " is the column of kept undeclared fields (extra_fields: keep)";
  }
  return std::nullopt;
}

std::optional<DeclarationError> check_field(const EntityDeclaration& entity, std::size_t index) {
  const FieldSpec& field = entity.fields[index];
  const auto at = [&field](DeclarationPart part, std::string message) {
    return error_at(part, std::move(message), field.name);
  };
  if (auto error = check_identifier("field name", field.name)) return at(DeclarationPart::kFieldName, *error);
  if (auto taken = column_taken(entity, field.name)) return at(DeclarationPart::kFieldName, *taken);
  for (std::size_t i = 0; i < index; ++i) {
    if (entity.fields[i].name == field.name) {
      return at(DeclarationPart::kFieldName, "field " + quoted_name(field.name) + " is declared twice");
    }
  }
  if (field.type == FieldType::kText && field.max_length < 1) {
    return at(DeclarationPart::kFieldMaxLength, "max_length must be at least 1");
  }
  if (field.type == FieldType::kDecimal) {
    if (field.precision < 1 || field.precision > kMaxDecimalPrecision) {
      return at(DeclarationPart::kFieldPrecision, "precision " + std::to_string(field.precision) +
                                                      " is out of range (1 to " + std::to_string(kMaxDecimalPrecision) +
                                                      ")");
    }
    if (field.scale < 0 || field.scale > field.precision) {
      return at(DeclarationPart::kFieldScale, "scale " + std::to_string(field.scale) + " is out of range (0 to " +
                                                  "the precision, " + std::to_string(field.precision) + ")");
    }
  } else {
    if (field.precision != 0) return at(DeclarationPart::kFieldPrecision, "precision applies to decimal fields only");
    if (field.scale != 0) return at(DeclarationPart::kFieldScale, "scale applies to decimal fields only");
  }
  return std::nullopt;
}

std::optional<DeclarationError> check_partition_by(const EntityDeclaration& entity) {
  const std::string& name = entity.partition_by;
  if (name == entity.key) return std::nullopt;
  constexpr std::string_view kExpected = " (expected the key or a text or integer field)";
  if (name == entity.revision) {
    return error_at(DeclarationPart::kPartitionBy, quoted_name(name) + " is the revision field" + std::string(kExpected));
  }
  const FieldSpec* field = entity.field(name);
  if (field == nullptr) {
    return error_at(DeclarationPart::kPartitionBy, quoted_name(name) + " is not a declared field" + std::string(kExpected));
  }
  if (field->type != FieldType::kText && field->type != FieldType::kInteger) {
    return error_at(DeclarationPart::kPartitionBy,
                    quoted_name(name) + " is a " + std::string(to_string(field->type)) + " field" + std::string(kExpected));
  }
  return std::nullopt;
}

}  // namespace

const FieldSpec* EntityDeclaration::field(std::string_view name) const {
  const auto found = std::find_if(fields.begin(), fields.end(), [name](const FieldSpec& f) { return f.name == name; });
  return found == fields.end() ? nullptr : &*found;
}

const EntityDeclaration& built_in_transaction_entity() {
  static const EntityDeclaration entity{
      .name = std::string(kBuiltInEntityName),
      .table = "transaction_state",
      .key = "transaction_id",
      .revision = "source_revision",
      .partition_by = "account_id",
      .extra_fields = ExtraFields::kIgnore,
      .fields =
          {
              // numeric(12,2): the amount's rules (at most 10 integer and 2 fraction digits).
              FieldSpec{.name = "amount", .type = FieldType::kDecimal, .required = true, .precision = 12, .scale = 2},
              // The identifiers' rule of transaction_id: at most 128 characters. Both
              // optional fields take an empty string as absent (docs/cli.md "Input records").
              FieldSpec{.name = "account_id", .type = FieldType::kText, .max_length = 128, .empty_is_absent = true},
              FieldSpec{.name = "occurred_at", .type = FieldType::kTimestamp, .empty_is_absent = true},
          },
  };
  return entity;
}

std::string quoted_name(std::string_view name) { return "'" + std::string(name) + "'"; }

bool is_version_table(std::string_view table, std::string_view prefix, std::string_view suffix) {
  if (table.size() <= prefix.size() + suffix.size() || !table.starts_with(prefix) || !table.ends_with(suffix)) {
    return false;
  }
  const std::string_view number = table.substr(prefix.size(), table.size() - prefix.size() - suffix.size());
  return std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<std::string> check_entity_name(std::string_view name) { return check_plain_name("entity name", name); }

std::optional<std::string> check_plain_name(std::string_view what, std::string_view name) {
  if (is_plain_name(name, kMaxEntityNameLength)) return std::nullopt;
  return std::string(what) + " " + quoted_name(name) + " is not a plain name ([a-z][a-z0-9_]{0,47}: a lowercase letter, " +
         "then up to 47 lowercase letters, digits and '_')";
}

std::optional<std::string> check_identifier(std::string_view what, std::string_view name) {
  if (!is_plain_name(name, kMaxIdentifierLength)) {
    return std::string(what) + " " + quoted_name(name) + " is not a plain identifier ([a-z][a-z0-9_]{0,62}: a lowercase " +
           "letter, then up to 62 lowercase letters, digits and '_')";
  }
  if (name.starts_with(kTidemarkPrefix)) {
    return std::string(what) + " " + quoted_name(name) + " starts with tidemark_ (reserved for Tidemark's own tables and " +
           "columns)";
  }
  return std::nullopt;
}

bool is_reserved_table_name(std::string_view table) {
  if (table.starts_with(kTidemarkPrefix)) return true;
  if (std::find(kMigrationTables.begin(), kMigrationTables.end(), table) != kMigrationTables.end()) return true;
  return std::any_of(kViewTablePatterns.begin(), kViewTablePatterns.end(), [table](const ViewTablePattern& view) {
    return is_version_table(table, view.prefix, view.suffix);
  });
}

std::optional<std::string> check_table_name(std::string_view table) {
  if (auto error = check_identifier("table name", table)) return error;
  if (is_reserved_table_name(table)) return "table name " + quoted_name(table) + " is reserved for Tidemark's own tables";
  return std::nullopt;
}

std::optional<DeclarationError> check_entity(const EntityDeclaration& entity) {
  if (auto error = check_entity_name(entity.name)) return error_at(DeclarationPart::kName, *error);
  if (auto error = check_identifier("table name", entity.table)) return error_at(DeclarationPart::kTable, *error);
  if (auto error = check_identifier("key field name", entity.key)) return error_at(DeclarationPart::kKey, *error);
  if (entity.extra_fields == ExtraFields::kKeep && entity.key == kExtraColumn) {
    return error_at(DeclarationPart::kKey, *column_taken(entity, entity.key));
  }
  if (auto error = check_identifier("revision field name", entity.revision)) {
    return error_at(DeclarationPart::kRevision, *error);
  }
  if (entity.revision == entity.key) {
    return error_at(DeclarationPart::kRevision, quoted_name(entity.revision) + " is the key field too");
  }
  if (entity.extra_fields == ExtraFields::kKeep && entity.revision == kExtraColumn) {
    return error_at(DeclarationPart::kRevision, *column_taken(entity, entity.revision));
  }
  for (std::size_t i = 0; i < entity.fields.size(); ++i) {
    if (auto error = check_field(entity, i)) return error;
  }
  return check_partition_by(entity);
}

std::optional<DeclarationError> check_declared_entity(const EntityDeclaration& entity) {
  if (entity.name == kBuiltInEntityName) {
    return error_at(DeclarationPart::kName,
                    "'transaction' is the built-in entity (a pipeline without entity: loads it); "
                    "declare yours under another name");
  }
  if (auto error = check_entity(entity)) return error;
  if (auto error = check_table_name(entity.table)) return error_at(DeclarationPart::kTable, *error);
  return std::nullopt;
}

std::optional<std::string> check_table_unused(const std::map<std::string, EntityDeclaration>& declared,
                                              const EntityDeclaration& entity) {
  for (const auto& [name, other] : declared) {
    if (name != entity.name && other.table == entity.table) {
      return "table " + quoted_name(entity.table) + " is already the table of entity " + quoted_name(name) +
             " (two entities may not share a table)";
    }
  }
  return std::nullopt;
}

}  // namespace tidemark::pipeline
