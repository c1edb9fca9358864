-- As account_balance_apply.sql, for a rebuild replaying the destination's whole history in
-- per-account order: the version filter alone (version < $2). A gap the replay meets is
-- permanent, because a sequence is taken under its counter's row lock, so when event n is
-- committed every earlier one is too; only a gap left by an older Tidemark (one counter for
-- all destinations) can remain, and the event after it must still be applied.
INSERT INTO {table} AS v (account_id, balance, version)
VALUES ($1, $3::numeric - $4::numeric, $2::bigint)
ON CONFLICT (account_id) DO UPDATE
   SET balance = v.balance + EXCLUDED.balance, version = EXCLUDED.version, updated_at = now()
 WHERE v.version < EXCLUDED.version
RETURNING 1
