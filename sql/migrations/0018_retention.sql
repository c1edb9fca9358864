-- Retention (docs/retention.md): runs and batch_ledger rows older than
-- retention.runs are deleted, each rolled up first, in the transaction that deletes it, into
-- its pipeline's totals for its UTC day, so dashboards keep history after the rows are gone.
-- Record counts are summed on the day a batch committed; run counts on the day a run was requested.
CREATE TABLE tidemark_run_daily (
  pipeline   text NOT NULL,
  day        date NOT NULL,
  runs       bigint NOT NULL DEFAULT 0,
  succeeded  bigint NOT NULL DEFAULT 0,
  stopped    bigint NOT NULL DEFAULT 0,
  failed     bigint NOT NULL DEFAULT 0,
  batches    bigint NOT NULL DEFAULT 0,
  input      bigint NOT NULL DEFAULT 0,
  inserted   bigint NOT NULL DEFAULT 0,
  updated    bigint NOT NULL DEFAULT 0,
  unchanged  bigint NOT NULL DEFAULT 0,
  stale      bigint NOT NULL DEFAULT 0,
  superseded bigint NOT NULL DEFAULT 0,
  duplicate  bigint NOT NULL DEFAULT 0,
  invalid    bigint NOT NULL DEFAULT 0,
  conflict   bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (pipeline, day)
);

-- What retention deleted of each destination's outbox (delivered rows past retention.outbox).
-- A rebuild from full history replays the destination's outbox, which then lacks these
-- events: `views rebuild` refuses it rather than build a version that is silently wrong.
CREATE TABLE tidemark_outbox_trimmed (
  destination       text PRIMARY KEY,
  deleted_rows      bigint NOT NULL,
  newest_deleted_at timestamptz NOT NULL  -- the latest delivered_at among the rows deleted
);
