-- One active run per pipeline, across processes and hosts: a session-level advisory lock
-- keyed by the pipeline's name. $1 pipeline
SELECT pg_try_advisory_lock(hashtextextended('tidemark pipeline ' || $1, 0))
