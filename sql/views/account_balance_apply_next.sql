-- As account_balance_apply.sql, for sequences after the first: the row must exist and be
-- exactly one behind.
UPDATE {table}
   SET balance = balance + ($3::numeric - $4::numeric), version = $2::bigint, updated_at = now()
 WHERE account_id = $1 AND version = $2::bigint - 1
RETURNING 1
