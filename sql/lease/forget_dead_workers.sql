-- Forgets the pipeline's workers silent for ten owner timeouts that own nothing (their sessions
-- go with them); one that resumes later is recorded again by its heartbeat.
-- $1 pipeline, $2 owner timeout (ms)
DELETE FROM tidemark_workers w
 WHERE w.pipeline = $1
   AND w.seen_at < now() - make_interval(secs => 10 * $2::bigint / 1000.0)
   AND NOT EXISTS (SELECT 1 FROM tidemark_partitions p WHERE p.owner = w.id)
