-- One version of the daily_totals view ({table} is daily_totals_v<N>): per UTC day, the sum
-- of the current amounts and the number of transactions whose current revision falls on it.
-- {table}_transactions is the version's own record of each transaction: the revision it
-- counts, on which day and with which amount, so that a newer revision knows what to take
-- off without reading the outbox (which retention empties). replaced_day and
-- replaced_amount are what the last revision took off: the upsert of
-- daily_totals_apply.sql returns them, read from the row it locked.
CREATE TABLE {table} (
  day    date PRIMARY KEY,
  total  numeric NOT NULL,
  events bigint NOT NULL
);
CREATE TABLE {table}_transactions (
  transaction_id  text PRIMARY KEY,
  source_revision bigint NOT NULL,
  day             date,
  amount          numeric NOT NULL,
  replaced_day    date,
  replaced_amount numeric
)
