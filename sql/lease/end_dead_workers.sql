-- Ends the sessions of the pipeline's dead workers (tidemark_worker_alive, migration 0019),
-- so that none of them can still commit, or hold a partition's row lock, once its partitions
-- are taken. Only sessions whose pid and start time match a recorded one: a pid reused by
-- another session is left alone. pg_terminate_backend needs the same role (or membership of
-- pg_signal_backend): every worker of a pipeline connects as one role (docs/scale-out.md).
-- Returns how many sessions were signalled. $1 pipeline, $2 owner timeout (ms)
SELECT count(*) FILTER (WHERE pg_terminate_backend(a.pid))
  FROM tidemark_workers w
  JOIN tidemark_worker_backends b ON b.worker = w.id
  JOIN pg_stat_activity a ON a.pid = b.backend_pid AND a.backend_start = b.backend_start
 WHERE w.pipeline = $1
   AND NOT tidemark_worker_alive(w.id, $2)
   AND a.pid <> pg_backend_pid()
