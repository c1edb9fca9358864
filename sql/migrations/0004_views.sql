-- Materialized views fed by the outbox (docs/rules.md rules 13-17). Each view lives in
-- versioned tables (account_balance_v1, account_balance_v2, ...) created by tidemark itself
-- (sql/views/*_create.sql); this registry says which versions exist. Every version that is
-- not retired receives the live events, so a rebuild (building) and the version in use
-- (live) are fed side by side until the old one is dropped.
CREATE TABLE views (
  name       text NOT NULL CHECK (name IN ('account_balance', 'daily_totals')),
  version    int NOT NULL CHECK (version > 0),
  status     text NOT NULL CHECK (status IN ('building', 'live', 'retired')),
  -- Where the version's contents start: the pg_current_snapshot() of the REPEATABLE READ
  -- snapshot it was filled from, or 'full history' when it replays the outbox.
  position   text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  live_at    timestamptz,
  retired_at timestamptz,
  PRIMARY KEY (name, version)
);

-- `views cleanup` deletes inbox rows by age.
CREATE INDEX inbox_processed_at ON inbox (processed_at);

-- daily_totals looks up the previous revision's event of a transaction (its creation day,
-- when that revision had no occurred_at), and rebuilds replay a destination's events.
CREATE INDEX outbox_destination_partition ON outbox (destination, partition_key, sequence);
