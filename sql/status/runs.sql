-- GET /v1/runs and `tidemark status` (its last run): runs newest first, each with its
-- outcome counts summed from its committed batches in batch_ledger, so a run cut short shows
-- what it committed. $1 pipeline ('' for every one), $2 status ('' for any), $3 only runs
-- with a smaller id (the `before` cursor; 0 for none), $4 at most this many. The fields are
-- those of GET /v1/runs/{id} (serve/run_status.sql), plus duration_ms: finished_at -
-- started_at in whole milliseconds, or the time so far while it runs, null before it starts.
SELECT json_build_object(
  'run_id', r.id, 'pipeline', r.pipeline, 'trigger', r.trigger, 'mode', r.mode, 'status', r.status,
  'request_id', r.request_id, 'reason', r.reason, 'error', r.error,
  'requested_at', r.requested_at, 'started_at', r.started_at, 'finished_at', r.finished_at,
  'rewritten_files', r.rewritten_files,
  'duration_ms', (extract(epoch FROM COALESCE(r.finished_at, now()) - r.started_at) * 1000)::bigint,
  'batches', l.batches, 'input', l.input,
  'inserted', l.inserted, 'updated', l.updated, 'unchanged', l.unchanged, 'stale', l.stale,
  'superseded', l.superseded, 'duplicate', l.duplicate, 'invalid', l.invalid, 'conflict', l.conflict,
  'checkpoint', (SELECT end_position FROM batch_ledger WHERE run_id = r.id ORDER BY batch_no DESC LIMIT 1)
)::text AS run
FROM (
  SELECT * FROM runs
  WHERE ($1 = '' OR pipeline = $1) AND ($2 = '' OR status = $2) AND ($3 = 0 OR id < $3)
  ORDER BY id DESC
  LIMIT $4
) r
CROSS JOIN LATERAL (
  SELECT count(*) AS batches,
         COALESCE(sum(input), 0)::bigint AS input,
         COALESCE(sum(inserted), 0)::bigint AS inserted,
         COALESCE(sum(updated), 0)::bigint AS updated,
         COALESCE(sum(unchanged), 0)::bigint AS unchanged,
         COALESCE(sum(stale), 0)::bigint AS stale,
         COALESCE(sum(superseded), 0)::bigint AS superseded,
         COALESCE(sum(duplicate), 0)::bigint AS duplicate,
         COALESCE(sum(invalid), 0)::bigint AS invalid,
         COALESCE(sum(conflict), 0)::bigint AS conflict
  FROM batch_ledger WHERE run_id = r.id
) l
ORDER BY r.id DESC
