#pragma once
// A declared view (docs/design/declared-views.md §1, issue 46): a read model of one entity,
// its current rows grouped and aggregated, declared in the config's `views:` section. Pure:
// the config parser builds declarations and checks them here against their entity; nothing
// builds or feeds a declared view yet (docs/design/declared-views-wip.md).
#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "pipeline/core/entity.hpp"
#include "pipeline/core/record.hpp"

namespace tidemark::pipeline {

// The views Tidemark ships as C++ (pipeline/views/registry.cpp): no declaration may take
// their names, whose tables (account_balance_v<n>, daily_totals_v<n>) exist already.
inline constexpr std::array<std::string_view, 2> kShippedViewNames = {"account_balance", "daily_totals"};

// Limits of a declaration: each group column and aggregate is a column of the view's table
// and of its per-record companion, and an IN list is written into the generated SQL.
inline constexpr std::size_t kMaxViewGroupColumns = 8;
inline constexpr std::size_t kMaxViewColumns = 32;
inline constexpr std::size_t kMaxViewFilterValues = 100;

// What a column computes over the counted records of its group, as SQL's aggregate does.
enum class ViewAggregate : unsigned char { kCount, kSum, kMin, kMax };

inline constexpr std::array<std::pair<std::string_view, ViewAggregate>, 4> kViewAggregates = {{
    {"count", ViewAggregate::kCount},
    {"sum", ViewAggregate::kSum},
    {"min", ViewAggregate::kMin},
    {"max", ViewAggregate::kMax},
}};

inline constexpr std::string_view to_string(ViewAggregate aggregate) {
  for (const auto& [name, listed] : kViewAggregates) {
    if (listed == aggregate) return name;
  }
  return "unknown";  // only a value cast from outside the enumerators
}

// How a `where` entry compares its field: kIn is `F: V` (one value) and `F: [V, ...]`; the
// others are `F: {OP: V}`.
enum class FilterOp : unsigned char { kIn, kLess, kLessOrEqual, kGreater, kGreaterOrEqual };

// The comparisons with their config spelling (kIn has none: it is the plain form).
inline constexpr std::array<std::pair<std::string_view, FilterOp>, 4> kFilterComparisons = {{
    {"<", FilterOp::kLess},
    {"<=", FilterOp::kLessOrEqual},
    {">", FilterOp::kGreater},
    {">=", FilterOp::kGreaterOrEqual},
}};

inline constexpr std::optional<FilterOp> filter_comparison_from_string(std::string_view text) {
  for (const auto& [listed, op] : kFilterComparisons) {
    if (listed == text) return op;
  }
  return std::nullopt;
}

inline constexpr std::string_view to_string(FilterOp op) {
  for (const auto& [name, listed] : kFilterComparisons) {
    if (listed == op) return name;
  }
  return op == FilterOp::kIn ? "in" : "unknown";
}

// One condition of `where:` (all are ANDed). A record whose field is absent (NULL) never
// matches, as in SQL.
struct ViewFilter {
  std::string field;                // a declared field or the key
  FilterOp op = FilterOp::kIn;
  std::vector<std::string> values;  // kIn: 1 ... kMaxViewFilterValues; a comparison: one
  int line = 0;                     // of its key in the config file (0: not from a file)

  friend bool operator==(const ViewFilter&, const ViewFilter&) = default;
};

// One aggregate column: `NAME: count`, `NAME: sum(FIELD)`, `min(FIELD)`, `max(FIELD)`.
struct ViewColumn {
  std::string name;
  ViewAggregate aggregate = ViewAggregate::kCount;
  std::string field;  // empty for count
  int line = 0;

  friend bool operator==(const ViewColumn&, const ViewColumn&) = default;
};

struct ViewDeclaration {
  std::string name;    // [a-z][a-z0-9_]{0,47}; its tables are NAME_v<N>
  std::string entity;  // a declared entity, or the built-in `transaction`
  // `group_by: partition`: one text column named after the entity's partition_by, holding
  // each change's partition key (the partition field's value, else the record's key).
  bool by_partition = false;
  std::vector<std::string> group_by;  // declared fields or the key, in order; empty when by_partition
  std::vector<ViewFilter> filters;
  std::vector<ViewColumn> columns;  // in declaration order: the table's order
  struct Lines {
    int name = 0;
    int entity = 0;
    int group_by = 0;
    friend bool operator==(const Lines&, const Lines&) = default;
  } lines;

  friend bool operator==(const ViewDeclaration&, const ViewDeclaration&) = default;
};

// `count`, `sum(total)`, `min(placed_at)`, `max(total)` (spaces allowed inside the
// parentheses) to the aggregate and its field; nullopt for anything else.
std::optional<std::pair<ViewAggregate, std::string>> parse_view_aggregate(std::string_view text);

// Which part of a declaration a ViewDeclarationError is about, so the config can point at its
// line: kGroupBy, kFilter and kColumn with the index of the item at fault (kWholePart: the
// key itself, as for a count out of range).
enum class ViewPart : unsigned char { kName, kEntity, kGroupBy, kFilter, kColumn };
inline constexpr std::size_t kWholePart = static_cast<std::size_t>(-1);

struct ViewDeclarationError {
  ViewPart part = ViewPart::kName;
  std::size_t index = kWholePart;
  std::string message;

  friend bool operator==(const ViewDeclarationError&, const ViewDeclarationError&) = default;
};

// A view name: an entity name's rule, not starting with tidemark_, not a shipped view's.
std::optional<std::string> check_view_name(std::string_view name);

// The rules a declaration keeps against `entity`, the one it names (view.entity ==
// entity.name): its name; 1 ... kMaxViewGroupColumns distinct group_by items, each the key or
// a text, integer, date or boolean field; each filter on the key or a declared non-json field,
// kIn on text, integer, date, boolean and the key with 1 ... kMaxViewFilterValues values,
// a comparison on integer, decimal, timestamp and date with one, every value valid for the
// field (canonical_filter_value); 1 ... kMaxViewColumns columns with distinct identifiers that
// are no group column, sum over integer and decimal fields, min and max over integer, decimal,
// timestamp and date ones. The first error in declaration order.
std::optional<ViewDeclarationError> check_view(const ViewDeclaration& view, const EntityDeclaration& entity);

// A filter's value, as the config writes it, in the canonical form of the field's type
// (pipeline/core/field_value.hpp), or the rule it breaks (a Rejection without the field's name,
// "not a boolean (true or false) in \"yes\""). `field` is a declared field or the key.
std::variant<std::string, Rejection> canonical_filter_value(const EntityDeclaration& entity, std::string_view field,
                                                            std::string_view text);

// `view` with each filter value in canonical form; `view` must pass check_view.
ViewDeclaration with_canonical_values(ViewDeclaration view, const EntityDeclaration& entity);

// The name of the group column(s) of the view's table: group_by, or the entity's
// partition_by for `group_by: partition`.
std::vector<std::string> group_columns(const ViewDeclaration& view, const EntityDeclaration& entity);

// A view's table is NAME_v<N>: no entity's table may look like one. The message names the
// entity whose table it is.
std::optional<std::string> check_view_tables_unused(const std::map<std::string, EntityDeclaration>& entities,
                                                    const ViewDeclaration& view);

// How a view keeps exactly once (design §3): a version filter on the per-partition sequence
// when its groups are partitions, else the inbox plus a counted revision per record.
enum class ViewStrategy : unsigned char { kVersionFilter, kInbox };

inline constexpr std::string_view to_string(ViewStrategy strategy) {
  return strategy == ViewStrategy::kVersionFilter ? "version_filter" : "inbox";
}

struct StrategyChoice {
  ViewStrategy strategy = ViewStrategy::kInbox;
  std::string why;  // what `views list` shows beside it

  friend bool operator==(const StrategyChoice&, const StrategyChoice&) = default;
};

// version_filter for `group_by: partition` without min or max; inbox otherwise, saying why.
StrategyChoice choose_strategy(const ViewDeclaration& view);

}  // namespace tidemark::pipeline
