-- A partition's run starts without the pipeline's lock, so a run left 'running' is abandoned
-- only when its worker is dead (tidemark_worker_alive, migration 0019). Then records the
-- run about to start as the worker's.
-- $1 pipeline, $2 owner timeout (ms), $3 the run about to start, $4 worker id
WITH abandoned AS (
  UPDATE runs SET status = 'failed', finished_at = now(),
         error = 'the worker running it died (killed?) or stopped sending its heartbeat; its committed batches stand'
   WHERE pipeline = $1 AND status = 'running' AND worker IS NOT NULL AND id <> $3
     AND NOT tidemark_worker_alive(worker, $2)
)
UPDATE runs SET worker = $4 WHERE id = $3
