-- Releases the pipeline's lock at the end of a run, at once: a closed connection's backend
-- may take a moment to exit, and the next run must not find the lock still held. $1 pipeline
SELECT pg_advisory_unlock(hashtextextended('tidemark pipeline ' || $1, 0))
