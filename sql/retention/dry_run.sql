-- `retention run --dry-run`: how many rows each kind would delete now, as the chunks decide
-- (the outbox kind counts changes of the log; windows in milliseconds: $1 outbox, $2 runs
-- (also the registry of files read), $3 quarantine, $4 requests, $5 inbox).
-- Read-only; the runs count includes those whose ledger rows would go first. Each count is
-- named by its kind (app/retention/retention.hpp kKinds).
WITH expired_runs AS (
  SELECT r.id FROM runs r
   WHERE r.status IN ('succeeded', 'stopped', 'failed')
     AND r.finished_at < now() - $2::bigint * interval '1 millisecond'
     AND r.id < (SELECT max(latest.id) FROM runs latest WHERE latest.pipeline = r.pipeline)
)
SELECT (SELECT count(*) FROM tidemark_change c
         WHERE c.created_at < now() - $1::bigint * interval '1 millisecond' AND tidemark_change_retired(c))
         AS outbox,
       (SELECT count(*) FROM batch_ledger l WHERE l.run_id IN (SELECT id FROM expired_runs)) AS batch_ledger,
       (SELECT count(*) FROM expired_runs) AS runs,
       (SELECT count(*) FROM quarantine WHERE released_at < now() - $3::bigint * interval '1 millisecond') AS quarantine,
       (SELECT count(*) FROM run_requests WHERE received_at < now() - $4::bigint * interval '1 millisecond') AS requests,
       (SELECT count(*) FROM inbox WHERE processed_at < now() - $5::bigint * interval '1 millisecond') AS inbox,
       (SELECT count(*) FROM tidemark_source_files WHERE seen_at < now() - $2::bigint * interval '1 millisecond')
         AS source_files
