-- Fills a new version from the current state, run in the REPEATABLE READ transaction that
-- created it: balances from transaction_state and versions from the view's own sequences
-- (destination account_balance), read in one snapshot, so each account's version is exactly
-- the last event its balance reflects. Used only when every pipeline that writes
-- transactions feeds the view (otherwise the state holds changes the view never received).
-- Accounts whose transactions all moved away keep a zero balance and their version.
INSERT INTO {table} (account_id, balance, version)
SELECT s.partition_key, COALESCE(sum(t.amount), 0), s.last_sequence
  FROM tidemark_destination_sequence s
  LEFT JOIN transaction_state t ON COALESCE(t.account_id, t.transaction_id) = s.partition_key
 WHERE s.destination = 'account_balance'
 GROUP BY s.partition_key, s.last_sequence
