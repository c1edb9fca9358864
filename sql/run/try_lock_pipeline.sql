-- One active run per pipeline, across processes and hosts: session-level advisory locks keyed
-- by the pipeline's name (pipeline/store/pipeline_lock.hpp: a run holds both of its two).
-- $1 the lock's key text
SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked
