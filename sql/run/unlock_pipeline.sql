-- Releases one of the pipeline's locks at the end of a run, at once: a closed connection's
-- backend may take a moment to exit, and the next run must not find the lock still held.
-- $1 pipeline, $2 whether the second lock
SELECT pg_advisory_unlock(hashtextextended(
  CASE WHEN $2 THEN 'tidemark pipeline, second session ' ELSE 'tidemark pipeline ' END || $1, 0))
