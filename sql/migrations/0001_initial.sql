-- Tidemark's tables. Applied once, in a transaction, by
-- pipeline/db/migrations.cpp, which records it in schema_migrations.

-- One row per business key; a higher source_revision replaces a lower one (docs/rules.md rule 1).
CREATE TABLE transaction_state (
  transaction_id  text PRIMARY KEY,
  source_revision bigint NOT NULL CHECK (source_revision >= 0),
  amount          numeric(12,2) NOT NULL,
  account_id      text,
  occurred_at     timestamptz,
  pipeline        text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);

-- Rejected records, as received, with the reason and where they were found.
CREATE TABLE quarantine (
  id              bigserial PRIMARY KEY,
  pipeline        text NOT NULL,
  source          text NOT NULL,  -- the checkpoint's source, or 'quarantine' for a release
  reason          text NOT NULL CHECK (reason IN ('invalid', 'conflict')),
  detail          text NOT NULL,
  transaction_id  text,
  source_revision bigint,
  raw             text NOT NULL,
  -- The exact bytes when `raw` could not hold them (NUL or invalid UTF-8 replaced by U+FFFD
  -- there), so that a release re-validates exactly what was received.
  raw_bytes       bytea,
  format          text NOT NULL CHECK (format IN ('csv', 'jsonl')),
  csv_header      text,  -- the header line of the record's CSV file, to decode it again
  position        text NOT NULL,
  run_id          bigint,
  created_at      timestamptz NOT NULL DEFAULT now(),
  released_at     timestamptz,
  released_by     text,
  release_outcome text
);
CREATE INDEX quarantine_pipeline_open ON quarantine (pipeline, id) WHERE released_at IS NULL;
-- A replayed source does not quarantine the same record twice.
CREATE UNIQUE INDEX quarantine_once ON quarantine (pipeline, source, position, reason, md5(raw));

-- The per-account sequence that orders delivery (docs/rules.md rule 12): incremented under this
-- row's lock in the transaction that writes the outbox rows.
CREATE TABLE account_sequence (
  partition_key text PRIMARY KEY,
  last_sequence bigint NOT NULL
);

-- Side effects, written in the same transaction as the state change (docs/rules.md rule 6).
CREATE TABLE outbox (
  id              bigserial PRIMARY KEY,
  destination     text NOT NULL,
  idempotency_key text NOT NULL UNIQUE,
  partition_key   text,
  sequence        bigint,
  payload         jsonb NOT NULL,
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
  attempts        int NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_error      text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  delivered_at    timestamptz
);
-- The relay claims by status, never by an id high-water mark (docs/rules.md rule 11).
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE status = 'pending';
CREATE INDEX outbox_partition ON outbox (destination, partition_key, sequence) WHERE status = 'pending';

-- Runs, from the CLI, the scheduler or a webhook; request_id makes a webhook idempotent.
CREATE TABLE runs (
  id           bigserial PRIMARY KEY,
  pipeline     text NOT NULL,
  trigger      text NOT NULL CHECK (trigger IN ('cli', 'schedule', 'webhook')),
  mode         text NOT NULL CHECK (mode IN ('resume', 'replay')),
  status       text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
  request_id   text UNIQUE,
  reason       text,
  requested_at timestamptz NOT NULL DEFAULT now(),
  started_at   timestamptz,
  finished_at  timestamptz,
  error        text
);

-- One row per committed batch; the CHECK is the reconciliation of docs/rules.md rule 8.
CREATE TABLE batch_ledger (
  id           bigserial PRIMARY KEY,
  pipeline     text NOT NULL,
  run_id       bigint NOT NULL REFERENCES runs (id),
  batch_no     int NOT NULL,
  source       text NOT NULL,
  start_position text NOT NULL,
  end_position text NOT NULL,
  input        bigint NOT NULL,
  inserted     bigint NOT NULL,
  updated      bigint NOT NULL,
  unchanged    bigint NOT NULL,
  stale        bigint NOT NULL,
  superseded   bigint NOT NULL,
  duplicate    bigint NOT NULL,
  invalid      bigint NOT NULL,
  conflict     bigint NOT NULL,
  committed_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (run_id, batch_no),
  CHECK (input = inserted + updated + unchanged + stale + superseded + duplicate + invalid + conflict)
);

-- Where each (pipeline, source) resumes. file/byte_offset order positions so that the
-- checkpoint never moves backwards (a replay re-reads from the start).
CREATE TABLE checkpoint (
  pipeline    text NOT NULL,
  source      text NOT NULL,
  position    text NOT NULL,
  file        text NOT NULL,
  byte_offset bigint NOT NULL,
  run_id      bigint,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (pipeline, source)
);

-- Per-consumer record of applied events (docs/rules.md rule 13): never keyed by event_id alone.
CREATE TABLE inbox (
  consumer     text NOT NULL,
  event_id     text NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, event_id)
);
