-- One chunk of runs retention, ledger first: of the next $3 batch_ledger rows by primary key
-- from id $1 on, those of an expired run (finished more than $2 milliseconds ago, and not its
-- pipeline's latest run, which `status` and the API show) are added to tidemark_run_daily on
-- their commit day and deleted, in this one statement, so the totals equal what was deleted:
-- the rollup sums the rows the DELETE returns, so a row another job deleted first (two jobs at
-- once: serve and a cron `retention run`) is counted by that job only.
-- Returns the chunk's last id, how many rows it deleted, and whether any row committed before the window.
WITH chunk AS (
  SELECT l.* FROM batch_ledger l WHERE l.id >= $1 ORDER BY l.id LIMIT $3
), expired AS (
  SELECT c.* FROM chunk c JOIN runs r ON r.id = c.run_id
   WHERE r.status IN ('succeeded', 'stopped', 'failed')
     AND r.finished_at < now() - $2::bigint * interval '1 millisecond'
     AND r.id < (SELECT max(latest.id) FROM runs latest WHERE latest.pipeline = r.pipeline)
), deleted AS (
  DELETE FROM batch_ledger l USING expired e WHERE l.id = e.id RETURNING l.*
), rolled_up AS (
  INSERT INTO tidemark_run_daily AS d (pipeline, day, batches, input, inserted, updated, unchanged, stale,
                                       superseded, duplicate, invalid, conflict)
  SELECT pipeline, (committed_at AT TIME ZONE 'UTC')::date, count(*), sum(input), sum(inserted), sum(updated),
         sum(unchanged), sum(stale), sum(superseded), sum(duplicate), sum(invalid), sum(conflict)
    FROM deleted GROUP BY 1, 2
  ON CONFLICT (pipeline, day) DO UPDATE SET
    batches = d.batches + EXCLUDED.batches, input = d.input + EXCLUDED.input,
    inserted = d.inserted + EXCLUDED.inserted, updated = d.updated + EXCLUDED.updated,
    unchanged = d.unchanged + EXCLUDED.unchanged, stale = d.stale + EXCLUDED.stale,
    superseded = d.superseded + EXCLUDED.superseded, duplicate = d.duplicate + EXCLUDED.duplicate,
    invalid = d.invalid + EXCLUDED.invalid, conflict = d.conflict + EXCLUDED.conflict
)
SELECT (SELECT max(id) FROM chunk) AS last_id,
       (SELECT count(*) FROM deleted) AS deleted,
       COALESCE((SELECT bool_or(committed_at < now() - $2::bigint * interval '1 millisecond') FROM chunk), false) AS any_older
