-- Releases one of a pipeline's locks at the end of a run, at once: a closed connection's
-- backend may take a moment to exit, and the next run must not find the lock still held.
-- $1 the lock's key text
SELECT pg_advisory_unlock(hashtextextended($1, 0))
