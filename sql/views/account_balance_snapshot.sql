-- Fills a new version from the current state, run in the REPEATABLE READ transaction that
-- created it: balances from transaction_state and versions from the view's own stream
-- (destination account_balance), read in one snapshot, so each account's version is exactly
-- the last event its balance reflects: the sequence its cursor delivered through, plus one
-- for each of its changes for the destination after `through` (their sequences follow on,
-- docs/delivery.md), found from the destination's oldest undelivered change on
-- (tidemark_undelivered). Used only when every pipeline that writes transactions feeds the
-- view (otherwise the state holds changes the view never received). Accounts whose
-- transactions all moved away keep a zero balance and their version.
WITH cursors AS (
  SELECT partition_key, through, last_sequence FROM tidemark_cursor WHERE destination = 'account_balance'
), waiting AS (
  SELECT u.partition_key, count(*) AS changes
    FROM tidemark_undelivered('account_balance') u
    LEFT JOIN cursors k ON k.partition_key = u.partition_key
   WHERE u.key_sequence > COALESCE(k.through, 0)
   GROUP BY u.partition_key
), versions AS (
  SELECT partition_key, COALESCE(k.last_sequence, 0) + COALESCE(w.changes, 0) AS version
    FROM cursors k
    FULL JOIN waiting w USING (partition_key)
)
INSERT INTO {table} (account_id, balance, version)
SELECT s.partition_key, COALESCE(sum(t.amount), 0), s.version
  FROM versions s
  LEFT JOIN transaction_state t ON COALESCE(t.account_id, t.transaction_id) = s.partition_key
 GROUP BY s.partition_key, s.version
