-- The last sequence applied to account $1 (no row: nothing applied yet).
SELECT version FROM {table} WHERE account_id = $1
