-- Called with the pipeline's lock held: no other process can be running this pipeline, so
-- a run still marked 'running' belongs to a process that died (kill -9, power loss).
-- $1 pipeline, $2 the run about to start (NULL for a new one)
UPDATE runs SET status = 'failed', finished_at = now(),
       error = 'the process running it ended before the run finished (killed?); its committed batches stand'
 WHERE pipeline = $1 AND status = 'running' AND id IS DISTINCT FROM $2
