-- Drops a retired daily_totals version's tables (its row in views stays: versions are never
-- reused).
DROP TABLE {table}, {table}_transactions
