-- Scale-out (docs/scale-out.md "Workers"): several processes on several hosts share
-- a partitioned pipeline's partitions through these tables alone. A worker proves it is alive
-- by its heartbeat (seen_at); it owns a partition through a lease row whose epoch every batch's
-- transaction checks, so a worker that was paused and taken over never commits again, which a
-- session advisory lock cannot ensure (a stopped process keeps its connection, and its lock).
CREATE TABLE tidemark_workers (
  id         text PRIMARY KEY,                  -- host:pid:random, one per process and pipeline
  pipeline   text NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  seen_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tidemark_workers_pipeline ON tidemark_workers (pipeline, seen_at);

-- The database sessions a worker writes through, so that a taker can end them: a stopped
-- worker's open transaction would otherwise hold its partition's row lock for ever. The
-- backend's start time tells a recorded pid from a later session that reuses it.
CREATE TABLE tidemark_worker_backends (
  worker        text NOT NULL REFERENCES tidemark_workers (id) ON DELETE CASCADE,
  backend_pid   integer NOT NULL,
  backend_start timestamptz NOT NULL,
  PRIMARY KEY (worker, backend_pid, backend_start)
);

-- Whether a worker is alive: its heartbeat is younger than the owner timeout, and, when it has
-- recorded sessions, one of them still exists. A killed process's sessions end with it, so its
-- partitions are free at once; a stopped one (SIGSTOP) keeps its sessions and is dead only when
-- its heartbeat is too old.
CREATE FUNCTION tidemark_worker_alive(worker text, owner_timeout_ms bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT EXISTS (
    SELECT 1 FROM tidemark_workers w
     WHERE w.id = worker
       AND w.seen_at >= now() - make_interval(secs => owner_timeout_ms / 1000.0)
       AND (NOT EXISTS (SELECT 1 FROM tidemark_worker_backends b WHERE b.worker = w.id)
            OR EXISTS (SELECT 1 FROM tidemark_worker_backends b
                         JOIN pg_stat_activity a ON a.pid = b.backend_pid AND a.backend_start = b.backend_start
                        WHERE b.worker = w.id)))
$$;

-- A partition's run names its worker: without the pipeline's lock, a run left 'running' is
-- known to be abandoned only when its worker is dead (lease/fail_abandoned_runs.sql).
ALTER TABLE runs ADD COLUMN worker text;

CREATE TABLE tidemark_partitions (
  pipeline    text NOT NULL,
  partition   integer NOT NULL CHECK (partition >= 0),
  owner       text,                             -- a tidemark_workers.id, or NULL when free
  epoch       bigint NOT NULL DEFAULT 0,        -- + 1 at every change of owner
  lease_until timestamptz,                      -- the owner's last batch or balance + owner_timeout
  PRIMARY KEY (pipeline, partition)
);
