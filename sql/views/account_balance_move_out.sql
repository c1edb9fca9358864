-- A revision moved its transaction from account $1 to another: the old account loses the
-- previous amount $2. Run only when the event itself was just applied to its new account,
-- so the version filter of that account makes this exactly once too; it leaves $1's
-- version alone (the event is not in $1's sequence). A sum commutes, so it may arrive
-- before $1's own earlier events: a missing row starts at version 0.
INSERT INTO {table} AS v (account_id, balance, version)
VALUES ($1, -($2::numeric), 0)
ON CONFLICT (account_id) DO UPDATE SET balance = v.balance - $2::numeric, updated_at = now()
