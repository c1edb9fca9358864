#include "pipeline/views/account_balance.hpp"

#include "sql/statements.hpp"

namespace tidemark::pipeline::views {

namespace {

class AccountBalanceView final : public View {
 public:
  std::string_view name() const override { return kAccountBalance; }

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
    if (!current.empty() && current[0][0].as<std::int64_t>() >= event.sequence) return ApplyOutcome::kAlreadyApplied;
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
  if (live.empty() || live[0][0].is_null()) return std::nullopt;
  AccountBalance reading;
  reading.view_version = live[0][0].as<int>();
  const auto rows = txn.exec_params(
      statement(sql::kViewsReadAccountBalance, txn.quote_name(table_name(kAccountBalance, reading.view_version))),
      account_id);
  if (!rows.empty()) {
    reading.balance = rows[0][0].c_str();
    reading.sequence = rows[0][1].as<std::int64_t>();
    reading.updated_at = rows[0][2].c_str();
  }
  return reading;
}

}  // namespace tidemark::pipeline::views
