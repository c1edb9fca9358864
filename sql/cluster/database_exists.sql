-- Whether the embedded cluster has database $1 (a row when it has).
SELECT 1 FROM pg_database WHERE datname = $1
