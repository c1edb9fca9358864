-- One version of the daily_totals view ({table} is daily_totals_v<N>): per UTC day, the sum
-- of the current amounts and the number of transactions whose current revision falls on it.
CREATE TABLE {table} (
  day    date PRIMARY KEY,
  total  numeric NOT NULL,
  events bigint NOT NULL
)
