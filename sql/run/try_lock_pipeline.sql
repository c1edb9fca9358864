-- One active run per pipeline, across processes and hosts: session-level advisory locks keyed
-- by the pipeline's name. A run holds both of the pipeline's locks while it commits (the
-- second on its second session when it stages batches ahead, pipeline/store/pipeline_lock.hpp).
-- $1 pipeline, $2 whether the second lock
SELECT pg_try_advisory_lock(hashtextextended(
  CASE WHEN $2 THEN 'tidemark pipeline, second session ' ELSE 'tidemark pipeline ' END || $1, 0))
