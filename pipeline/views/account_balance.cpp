#include "pipeline/views/account_balance.hpp"

#include "pipeline/core/entity.hpp"
#include "pipeline/store/pg/row.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline::views {

namespace {

class AccountBalanceView final : public View {
 public:
  std::string_view name() const override { return kAccountBalance; }

  std::string_view entity() const override { return kBuiltInEntityName; }

  std::string_view create_statement() const override { return sql::kViewsAccountBalanceCreate; }

  // Over the whole history a gap is permanent (see account_balance_apply_over_gap.sql); the
  // live feed never applies over one.
  ApplyOutcome apply(pqxx::transaction_base& txn, const std::string& table, const ViewEvent& event,
                     Feed feed) const override {
    const std::string previous_partition = event.previous_account_id.value_or(event.transaction_id);
    // A revision that moved the transaction to another account adds its whole amount here and
    // takes the previous amount off the old account.
    const bool moved = event.previous_amount && previous_partition != event.partition_key;
    const std::string offset = moved ? "0" : event.previous_amount.value_or("0");
    const std::string_view file = feed == Feed::kHistory ? sql::kViewsAccountBalanceApplyOverGap
                                  : event.sequence == 1  ? sql::kViewsAccountBalanceApply
                                                         : sql::kViewsAccountBalanceApplyNext;
    const auto applied =
        txn.exec_params(statement(file, table), event.partition_key, event.sequence, event.amount, offset);
    if (!applied.empty()) {
      if (moved) {
        txn.exec_params(statement(sql::kViewsAccountBalanceMoveOut, table), previous_partition,
                        *event.previous_amount);
      }
      return ApplyOutcome::kApplied;
    }
    const auto current = txn.exec_params(statement(sql::kViewsAccountBalanceVersion, table), event.partition_key);
    if (!current.empty() && db::Row(current[0]).get<std::int64_t>("version") >= event.sequence) {
      return ApplyOutcome::kAlreadyApplied;
    }
    return ApplyOutcome::kGap;
  }

  std::string_view drop_statement() const override { return sql::kViewsDropTable; }

  std::optional<std::string_view> snapshot_statement() const override { return sql::kViewsAccountBalanceSnapshot; }

  // In per-account order, the events its table does not reflect yet (all of them after no
  // snapshot; the version filter drops the rest).
  std::string replay_query(const std::string& table) const override {
    return statement(sql::kViewsAccountBalanceCatchUp, table);
  }
};

}  // namespace

const View& account_balance_view() {
  static const AccountBalanceView view;
  return view;
}

std::optional<AccountBalance> read_account_balance(pqxx::connection& connection, const std::string& account_id) {
  pqxx::read_transaction txn(connection);
  const auto live = txn.exec_params(
      std::string(sql::kViewsLiveVersion), std::string(kAccountBalance));
  const auto live_version = live.empty() ? std::nullopt : db::Row(live[0]).optional<int>("version");
  if (!live_version) return std::nullopt;
  AccountBalance reading;
  reading.view_version = *live_version;
  const auto rows = txn.exec_params(
      statement(sql::kViewsReadAccountBalance, txn.quote_name(table_name(kAccountBalance, reading.view_version))),
      account_id);
  if (!rows.empty()) {
    const db::Row row(rows[0]);
    reading.balance = row.text("balance");
    reading.sequence = row.get<std::int64_t>("version");
    reading.updated_at = row.text("updated_at");
  }
  return reading;
}

}  // namespace tidemark::pipeline::views
