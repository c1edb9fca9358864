-- GET /v1/runs/{id}: the run and its outcome counts, summed from its committed batches.
SELECT json_build_object(
  'run_id', r.id, 'pipeline', r.pipeline, 'trigger', r.trigger, 'mode', r.mode, 'status', r.status,
  'request_id', r.request_id, 'reason', r.reason, 'error', r.error,
  'requested_at', r.requested_at, 'started_at', r.started_at, 'finished_at', r.finished_at,
  'rewritten_files', r.rewritten_files,
  'batches', count(l.id),
  'input', COALESCE(sum(l.input), 0)::bigint,
  'inserted', COALESCE(sum(l.inserted), 0)::bigint,
  'updated', COALESCE(sum(l.updated), 0)::bigint,
  'unchanged', COALESCE(sum(l.unchanged), 0)::bigint,
  'stale', COALESCE(sum(l.stale), 0)::bigint,
  'superseded', COALESCE(sum(l.superseded), 0)::bigint,
  'duplicate', COALESCE(sum(l.duplicate), 0)::bigint,
  'invalid', COALESCE(sum(l.invalid), 0)::bigint,
  'conflict', COALESCE(sum(l.conflict), 0)::bigint,
  'checkpoint', (SELECT end_position FROM batch_ledger WHERE run_id = r.id ORDER BY batch_no DESC LIMIT 1)
)::text AS document
FROM runs r
LEFT JOIN batch_ledger l ON l.run_id = r.id
WHERE r.id = $1
GROUP BY r.id
