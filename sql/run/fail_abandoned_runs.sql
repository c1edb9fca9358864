-- Called with the pipeline's lock held: no other process can be running this pipeline, so
-- a run still marked 'running' belongs to a process that died (kill -9, power loss). Not a
-- partition's run (a worker's): other workers run those without the lock (lease/fail_abandoned_runs.sql).
-- $1 pipeline, $2 the run about to start (NULL for a new one)
UPDATE runs SET status = 'failed', finished_at = now(),
       error = 'the process running it ended before the run finished (killed?); its committed batches stand'
 WHERE pipeline = $1 AND status = 'running' AND id IS DISTINCT FROM $2 AND worker IS NULL
