#pragma once
// account_balance: per-account deltas, deduplicated by the version filter on the per-account
// sequence (needs per-account order; refuses gaps). A new version can start from a snapshot
// of transaction_state.
#include <cstdint>
#include <optional>
#include <string>

#include <pqxx/pqxx>

#include "pipeline/views/view.hpp"

namespace tidemark::pipeline::views {

inline constexpr char kAccountBalance[] = "account_balance";

const View& account_balance_view();

// An account's row in the newest live version of account_balance.
struct AccountBalance {
  int view_version = 0;
  std::string balance = "0";  // numeric as text; "0" before the account's first event
  std::int64_t sequence = 0;  // the account's last applied sequence (0 before its first)
  std::string updated_at;     // empty before the account's first event
};

// nullopt when account_balance has no live version.
std::optional<AccountBalance> read_account_balance(pqxx::connection& connection, const std::string& account_id);

}  // namespace tidemark::pipeline::views
