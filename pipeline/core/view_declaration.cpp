#include "pipeline/core/view_declaration.hpp"

#include <algorithm>
#include <initializer_list>

#include "pipeline/core/field_value.hpp"

namespace tidemark::pipeline {

namespace {

constexpr std::string_view kTidemarkPrefix = "tidemark_";
// The key's rule as a field: the identifiers' rule (docs/entities.md "key").
constexpr std::size_t kMaxKeyLength = 128;

ViewDeclarationError error_at(ViewPart part, std::size_t index, std::string message) {
  return ViewDeclarationError{part, index, std::move(message)};
}

bool one_of(FieldType type, std::initializer_list<FieldType> types) {
  return std::find(types.begin(), types.end(), type) != types.end();
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

// The key as the field it is for a view: text of at most 128 characters.
FieldSpec key_spec(const EntityDeclaration& entity) {
  return FieldSpec{.name = entity.key, .type = FieldType::kText, .max_length = kMaxKeyLength};
}

// Field `name` of `entity` as a view reads it: a declared field or the key; else what it is
// instead, for a message that ends with `expected`.
std::variant<FieldSpec, std::string> view_field(const EntityDeclaration& entity, std::string_view name,
                                                std::string_view expected) {
  if (name == entity.key) return key_spec(entity);
  if (const FieldSpec* field = entity.field(name)) return *field;
  if (name == entity.revision) return quoted_name(name) + " is the revision field (" + std::string(expected) + ")";
  return quoted_name(name) + " is not a declared field of entity " + entity.name + " (" + std::string(expected) + ")";
}

std::string a_type(FieldType type) { return std::string(to_string(type)); }

std::string is_a(std::string_view name, FieldType type) {
  return quoted_name(name) + " is a" + (type == FieldType::kInteger ? "n " : " ") + a_type(type) + " field";
}

std::optional<ViewDeclarationError> check_group_by(const ViewDeclaration& view, const EntityDeclaration& entity) {
  if (view.by_partition) return std::nullopt;
  const std::string expected =
      "group by text, integer, date or boolean fields, the key " + entity.key + ", or write group_by: partition";
  if (view.group_by.empty()) {
    return error_at(ViewPart::kGroupBy, kWholePart, "expected at least one field (" + expected + ")");
  }
  if (view.group_by.size() > kMaxViewGroupColumns) {
    return error_at(ViewPart::kGroupBy, kWholePart,
                    "at most " + std::to_string(kMaxViewGroupColumns) + " fields, got " +
                        std::to_string(view.group_by.size()));
  }
  for (std::size_t i = 0; i < view.group_by.size(); ++i) {
    const std::string& name = view.group_by[i];
    const auto field = view_field(entity, name, expected);
    if (const auto* problem = std::get_if<std::string>(&field)) return error_at(ViewPart::kGroupBy, i, *problem);
    const FieldType type = std::get<FieldSpec>(field).type;
    if (!one_of(type, {FieldType::kText, FieldType::kInteger, FieldType::kDate, FieldType::kBoolean})) {
      return error_at(ViewPart::kGroupBy, i, is_a(name, type) + " (" + expected + ")");
    }
    if (std::find(view.group_by.begin(), view.group_by.begin() + static_cast<std::ptrdiff_t>(i), name) !=
        view.group_by.begin() + static_cast<std::ptrdiff_t>(i)) {
      return error_at(ViewPart::kGroupBy, i, quoted_name(name) + " is listed twice");
    }
  }
  return std::nullopt;
}

std::optional<ViewDeclarationError> check_filter(const ViewFilter& filter, std::size_t index,
                                                 const EntityDeclaration& entity) {
  const auto at = [index](std::string message) { return error_at(ViewPart::kFilter, index, std::move(message)); };
  const auto field = view_field(entity, filter.field, "filter on declared fields or the key " + entity.key);
  if (const auto* problem = std::get_if<std::string>(&field)) return at(*problem);
  const FieldType type = std::get<FieldSpec>(field).type;
  if (type == FieldType::kJson) return at(is_a(filter.field, type) + ": json fields cannot be filtered on");
  if (filter.op == FilterOp::kIn) {
    if (!one_of(type, {FieldType::kText, FieldType::kInteger, FieldType::kDate, FieldType::kBoolean})) {
      return at("compare " + a_type(type) + " fields with <, <=, > or >= (e.g. {\">=\": \"10\"}), not for equality");
    }
    if (filter.values.empty()) return at("expected at least one value");
    if (filter.values.size() > kMaxViewFilterValues) {
      return at("at most " + std::to_string(kMaxViewFilterValues) + " values, got " +
                std::to_string(filter.values.size()));
    }
  } else {
    if (!one_of(type, {FieldType::kInteger, FieldType::kDecimal, FieldType::kTimestamp, FieldType::kDate})) {
      return at(is_a(filter.field, type) + ": compare it for equality (F: V or F: [V, ...]); <, <=, > and >= " +
                "apply to integer, decimal, timestamp and date fields");
    }
    if (filter.values.size() != 1) return at(std::string(to_string(filter.op)) + " takes one value");
  }
  for (const auto& value : filter.values) {
    const auto canonical = canonical_filter_value(entity, filter.field, value);
    if (const auto* rejection = std::get_if<Rejection>(&canonical)) return at(rejection->detail);
  }
  return std::nullopt;
}

std::optional<ViewDeclarationError> check_column(const ViewDeclaration& view, std::size_t index,
                                                 const EntityDeclaration& entity,
                                                 const std::vector<std::string>& groups) {
  const ViewColumn& column = view.columns[index];
  const auto at = [index](std::string message) { return error_at(ViewPart::kColumn, index, std::move(message)); };
  if (auto error = check_identifier("column name", column.name)) return at(*error);
  if (std::find(groups.begin(), groups.end(), column.name) != groups.end()) {
    return at(quoted_name(column.name) + " is a group_by column");
  }
  for (std::size_t i = 0; i < index; ++i) {
    if (view.columns[i].name == column.name) return at("column " + quoted_name(column.name) + " is declared twice");
  }
  const std::string written = std::string(to_string(column.aggregate)) + "(" + column.field + ")";
  if (column.aggregate == ViewAggregate::kCount) {
    if (!column.field.empty()) return at(written + ": count takes no field (write count)");
    return std::nullopt;
  }
  const bool sum = column.aggregate == ViewAggregate::kSum;
  const std::string expected = sum ? "sum integer or decimal fields"
                                   : "min and max apply to integer, decimal, timestamp and date fields";
  const auto field = view_field(entity, column.field, expected);
  if (const auto* problem = std::get_if<std::string>(&field)) return at(written + ": " + *problem);
  const FieldType type = std::get<FieldSpec>(field).type;
  const bool fits =
      sum ? one_of(type, {FieldType::kInteger, FieldType::kDecimal})
          : one_of(type, {FieldType::kInteger, FieldType::kDecimal, FieldType::kTimestamp, FieldType::kDate});
  if (!fits) return at(written + ": " + is_a(column.field, type) + " (" + expected + ")");
  return std::nullopt;
}

}  // namespace

std::optional<std::pair<ViewAggregate, std::string>> parse_view_aggregate(std::string_view text) {
  if (text == "count") return std::pair{ViewAggregate::kCount, std::string()};
  const auto open = text.find('(');
  if (open == std::string_view::npos || text.empty() || text.back() != ')') return std::nullopt;
  const std::string_view name = text.substr(0, open);
  const std::string_view field = trimmed(text.substr(open + 1, text.size() - open - 2));
  if (field.empty() || field.find_first_of("(), ") != std::string_view::npos) return std::nullopt;
  for (const auto& [listed, aggregate] : kViewAggregates) {
    if (listed == name && aggregate != ViewAggregate::kCount) return std::pair{aggregate, std::string(field)};
  }
  return std::nullopt;
}

std::optional<std::string> check_view_name(std::string_view name) {
  if (auto error = check_plain_name("view name", name)) return error;
  if (name.starts_with(kTidemarkPrefix)) {
    return "view name " + quoted_name(name) + " starts with tidemark_ (reserved for Tidemark's own tables)";
  }
  if (std::find(kShippedViewNames.begin(), kShippedViewNames.end(), name) != kShippedViewNames.end()) {
    return quoted_name(name) + " is a view Tidemark ships (list it as a kind: view destination); declare yours under " +
           "another name";
  }
  return std::nullopt;
}

std::variant<std::string, Rejection> canonical_filter_value(const EntityDeclaration& entity, std::string_view field,
                                                            std::string_view text) {
  FieldSpec spec = field == entity.key ? key_spec(entity) : *entity.field(field);
  spec.required = false;  // an empty value is refused below, with the reason that applies here
  // The config's text is untyped, as a delimited file's: `10` reads as a number or a string.
  const FieldCheck check = FieldValidator(spec).check(Field{std::string(text), FieldKind::kUntyped});
  if (const auto* rejection = std::get_if<Rejection>(&check)) {
    const std::string prefix = spec.name + ": ";  // the message names the key already
    std::string detail = rejection->detail;
    if (detail.starts_with(prefix)) detail.erase(0, prefix.size());
    return Rejection{std::move(detail), std::string(field)};
  }
  const auto& canonical = std::get<CanonicalValue>(check);
  if (!canonical) {
    return Rejection{"an empty value is absent, and an absent field (NULL) never matches", std::string(field)};
  }
  return *canonical;
}

ViewDeclaration with_canonical_values(ViewDeclaration view, const EntityDeclaration& entity) {
  for (auto& filter : view.filters) {
    for (auto& value : filter.values) {
      value = std::get<std::string>(canonical_filter_value(entity, filter.field, value));
    }
  }
  return view;
}

std::vector<std::string> group_columns(const ViewDeclaration& view, const EntityDeclaration& entity) {
  if (view.by_partition) return {entity.partition_by};
  return view.group_by;
}

std::optional<ViewDeclarationError> check_view(const ViewDeclaration& view, const EntityDeclaration& entity) {
  if (auto error = check_view_name(view.name)) return error_at(ViewPart::kName, kWholePart, *error);
  if (view.entity != entity.name) {
    return error_at(ViewPart::kEntity, kWholePart,
                    "view " + view.name + " reads entity " + quoted_name(view.entity) + ", not " + quoted_name(entity.name));
  }
  if (auto error = check_group_by(view, entity)) return error;
  for (std::size_t i = 0; i < view.filters.size(); ++i) {
    if (auto error = check_filter(view.filters[i], i, entity)) return error;
  }
  if (view.columns.empty()) {
    return error_at(ViewPart::kColumn, kWholePart,
                    "expected at least one column (NAME: count, sum(FIELD), min(FIELD) or max(FIELD))");
  }
  if (view.columns.size() > kMaxViewColumns) {
    return error_at(ViewPart::kColumn, kWholePart,
                    "at most " + std::to_string(kMaxViewColumns) + " columns, got " +
                        std::to_string(view.columns.size()));
  }
  const auto groups = group_columns(view, entity);
  for (std::size_t i = 0; i < view.columns.size(); ++i) {
    if (auto error = check_column(view, i, entity, groups)) return error;
  }
  return std::nullopt;
}

std::optional<std::string> check_view_tables_unused(const std::map<std::string, EntityDeclaration>& entities,
                                                    const ViewDeclaration& view) {
  const std::string prefix = view.name + "_v";
  for (const auto& [name, entity] : entities) {
    if (is_version_table(entity.table, prefix)) {
      return "entity " + name + "'s table " + quoted_name(entity.table) + " has the name of a version of this view (" +
             view.name + "_v<N>); name the view or the table otherwise";
    }
  }
  return std::nullopt;
}

StrategyChoice choose_strategy(const ViewDeclaration& view) {
  for (const auto& column : view.columns) {
    if (column.aggregate == ViewAggregate::kMin || column.aggregate == ViewAggregate::kMax) {
      return {ViewStrategy::kInbox, std::string(to_string(column.aggregate)) + "(" + column.field +
                                        ") needs each record's counted value to recompute its group"};
    }
  }
  if (view.by_partition) {
    return {ViewStrategy::kVersionFilter,
            "group_by is the partition key: each group's events arrive in per-partition order, so a version filter "
            "drops redeliveries (rule 15)"};
  }
  std::string groups;
  for (const auto& group : view.group_by) groups += (groups.empty() ? "" : ", ") + group;
  return {ViewStrategy::kInbox, "group_by [" + groups +
                                    "] is not the partition key: a group's events come from many partitions in any "
                                    "order (rules 13, 14, 16)"};
}

}  // namespace tidemark::pipeline
