-- One version of the account_balance view ({table} is account_balance_v<N>). `version` is
-- the per-account sequence of the last event applied: the version filter (docs/rules.md rule 15).
CREATE TABLE {table} (
  account_id text PRIMARY KEY,
  balance    numeric NOT NULL,
  version    bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
)
