-- Drops a retired version's table (its row in views stays: versions are never reused).
DROP TABLE {table}
