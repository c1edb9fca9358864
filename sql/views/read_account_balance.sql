-- An account's row in the newest live version of account_balance (read-your-writes).
-- {table} is the live version's table, quoted by the caller. $1 the account id
SELECT balance::text, version, updated_at FROM {table} WHERE account_id = $1
