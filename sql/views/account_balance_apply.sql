-- Applies the delta $3 - $4 of the event with sequence $2 to account $1, only when it is the
-- account's next event: the version filter drops redeliveries (version >= $2) and refuses
-- an event whose predecessor has not been applied (version < $2 - 1), so that a delta is
-- never applied out of order (docs/rules.md rule 15). Sequence 1 may create the row (or complete
-- one that a move-out created with version 0).
INSERT INTO {table} AS v (account_id, balance, version)
SELECT $1, $3::numeric - $4::numeric, $2::bigint WHERE $2::bigint = 1
ON CONFLICT (account_id) DO UPDATE
   SET balance = v.balance + EXCLUDED.balance, version = EXCLUDED.version, updated_at = now()
 WHERE v.version = EXCLUDED.version - 1
RETURNING 1
