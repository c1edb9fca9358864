-- A partition's run starts without the pipeline's lock, so a run left 'running' is abandoned
-- only when its worker is dead: its heartbeat is older than the owner timeout. Then records the
-- run about to start as the worker's.
-- $1 pipeline, $2 owner timeout (ms), $3 the run about to start, $4 worker id
WITH abandoned AS (
  UPDATE runs SET status = 'failed', finished_at = now(),
         error = 'the worker running it stopped sending its heartbeat (killed?); its committed batches stand'
   WHERE pipeline = $1 AND status = 'running' AND worker IS NOT NULL AND id <> $3
     AND worker NOT IN (SELECT id FROM tidemark_workers
                         WHERE pipeline = $1 AND seen_at >= now() - make_interval(secs => $2::bigint / 1000.0))
)
UPDATE runs SET worker = $4 WHERE id = $3
