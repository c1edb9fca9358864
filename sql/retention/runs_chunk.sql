-- One chunk of runs retention, after the ledger: of the next $3 runs by primary key from id $1
-- on, the expired ones (as in ledger_chunk.sql) with no ledger row left are counted into
-- tidemark_run_daily on the day they were requested and deleted, in this one statement (the
-- rollup sums what the DELETE returns, as in ledger_chunk.sql).
-- Their webhook-ids (run_requests) go with them (ON DELETE CASCADE).
-- Returns the chunk's last id, how many runs it deleted, and whether any was requested before the window.
WITH chunk AS (
  SELECT r.* FROM runs r WHERE r.id >= $1 ORDER BY r.id LIMIT $3
), expired AS (
  SELECT c.* FROM chunk c
   WHERE c.status IN ('succeeded', 'stopped', 'failed')
     AND c.finished_at < now() - $2::bigint * interval '1 millisecond'
     AND c.id < (SELECT max(latest.id) FROM runs latest WHERE latest.pipeline = c.pipeline)
     AND NOT EXISTS (SELECT 1 FROM batch_ledger l WHERE l.run_id = c.id)
), deleted AS (
  DELETE FROM runs r USING expired e WHERE r.id = e.id RETURNING r.*
), rolled_up AS (
  INSERT INTO tidemark_run_daily AS d (pipeline, day, runs, succeeded, stopped, failed)
  SELECT pipeline, (requested_at AT TIME ZONE 'UTC')::date, count(*), count(*) FILTER (WHERE status = 'succeeded'),
         count(*) FILTER (WHERE status = 'stopped'), count(*) FILTER (WHERE status = 'failed')
    FROM deleted GROUP BY 1, 2
  ON CONFLICT (pipeline, day) DO UPDATE SET
    runs = d.runs + EXCLUDED.runs, succeeded = d.succeeded + EXCLUDED.succeeded,
    stopped = d.stopped + EXCLUDED.stopped, failed = d.failed + EXCLUDED.failed
)
SELECT (SELECT max(id) FROM chunk) AS last_id,
       (SELECT count(*) FROM deleted) AS deleted,
       COALESCE((SELECT bool_or(requested_at < now() - $2::bigint * interval '1 millisecond') FROM chunk), false) AS any_older
