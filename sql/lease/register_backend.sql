-- Records the calling session as one the worker writes through (see migration 0019), and
-- forgets the worker's sessions that have ended. $1 worker id
WITH forgotten AS (
  DELETE FROM tidemark_worker_backends b
   WHERE b.worker = $1
     AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                      WHERE a.pid = b.backend_pid AND a.backend_start = b.backend_start)
)
INSERT INTO tidemark_worker_backends (worker, backend_pid, backend_start)
SELECT $1, pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()
ON CONFLICT DO NOTHING
