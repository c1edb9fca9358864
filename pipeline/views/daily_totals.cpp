#include "pipeline/views/daily_totals.hpp"

#include "pipeline/core/entity.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline::views {

namespace {

class DailyTotalsView final : public View {
 public:
  std::string_view name() const override { return kDailyTotals; }

  std::string_view entity() const override { return kBuiltInEntityName; }

  std::string_view create_statement() const override { return sql::kViewsDailyTotalsCreate; }

  // The inbox drops a redelivery and the transaction's recorded revision a superseded one,
  // whatever the feed; per-day sums need no order.
  ApplyOutcome apply(pqxx::transaction_base& txn, const std::string& table, const ViewEvent& event,
                     Feed /*feed*/) const override {
    const auto applied = txn.exec_params(statement(sql::kViewsDailyTotalsApply, table), table, event.event_id,
                                         event.outbox_id, event.transaction_id, event.source_revision, event.amount,
                                         event.occurred_at ? event.occurred_at->c_str() : nullptr);
    return applied.empty() ? ApplyOutcome::kAlreadyApplied : ApplyOutcome::kApplied;
  }

  std::string_view drop_statement() const override { return sql::kViewsDailyTotalsDrop; }

  // A snapshot would need the inbox seeded with the id of every event it reflects, and the
  // day of a record without occurred_at depends on event creation times (docs/views.md).
  std::optional<std::string_view> snapshot_statement() const override { return std::nullopt; }

  // All of them, through its own inbox, which also dedups against the relay feeding it meanwhile.
  std::string replay_query(const std::string& /*table*/) const override { return std::string(sql::kViewsHistory); }
};

}  // namespace

const View& daily_totals_view() {
  static const DailyTotalsView view;
  return view;
}

}  // namespace tidemark::pipeline::views
