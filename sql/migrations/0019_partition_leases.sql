-- issue 16, scale-out (docs/scale-out.md "Workers"): several processes on several hosts share
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
