-- Waits (up to lock_timeout) for one of a pipeline's locks to be free, and holds it to the end
-- of the transaction only. $1 the lock's key text (sql/run/try_lock_pipeline.sql)
SELECT pg_advisory_xact_lock(hashtextextended($1, 0))
