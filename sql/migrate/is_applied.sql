-- Whether migration $1 (its file name) was applied already.
SELECT 1 FROM schema_migrations WHERE version = $1
