-- One repetition of bench/cost_model.sh: the parts of bench/baseline.sql's one statement as
-- statements of their own, over temporary tables created before the clock starts (they
-- write no WAL), each followed by its mark (part, ms, WAL bytes). Run inside BEGIN …
-- ROLLBACK, after the script's \copy into bench_stage and the mark of `copy`.
-- psql variables: stored, batch, destinations, dests ('{ledger,dest2}'), variant, rep,
-- pipeline, run_id, explain ('' or 'EXPLAIN (ANALYZE, BUFFERS, WAL)'), t0, l0.

:explain INSERT INTO bench_versions
SELECT transaction_id, source_revision, min(ord), count(*), min(amount), min(account_id COLLATE "C"), min(occurred_at),
       (min(amount) <> max(amount)
        OR min(account_id COLLATE "C") <> max(account_id COLLATE "C")
        OR count(account_id) NOT IN (0, count(*))
        OR min(occurred_at) <> max(occurred_at)
        OR count(occurred_at) NOT IN (0, count(*))),
       source_revision = max(source_revision) OVER (PARTITION BY transaction_id)
  FROM bench_stage
 GROUP BY transaction_id, source_revision;
SELECT :stored, :batch, :destinations, :'variant', :rep, 'group',
       round((extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000)::numeric, 3),
       pg_current_wal_insert_lsn() - :'l0'::pg_lsn, :batch, 0;
SELECT clock_timestamp() AS t0, pg_current_wal_insert_lsn() AS l0 \gset

:explain INSERT INTO bench_stored
SELECT v.*, t.source_revision, t.amount, t.account_id, t.occurred_at,
       v.batch_conflict
         OR COALESCE(t.source_revision = v.source_revision
                     AND (t.amount, t.account_id, t.occurred_at)
                         IS DISTINCT FROM (v.amount, v.account_id, v.occurred_at), false)
  FROM bench_versions v
  LEFT JOIN transaction_state t USING (transaction_id);
SELECT :stored, :batch, :destinations, :'variant', :rep, 'join',
       round((extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000)::numeric, 3),
       pg_current_wal_insert_lsn() - :'l0'::pg_lsn, :batch, 0;
SELECT clock_timestamp() AS t0, pg_current_wal_insert_lsn() AS l0 \gset

:explain WITH upserted AS (
  INSERT INTO transaction_state AS cur (transaction_id, source_revision, amount, account_id, occurred_at, pipeline)
  SELECT transaction_id, source_revision, amount, account_id, occurred_at, :'pipeline' FROM bench_stored
   WHERE candidate AND NOT conflict AND (stored_revision IS NULL OR stored_revision < source_revision)
  ON CONFLICT (transaction_id) DO UPDATE
     SET source_revision = EXCLUDED.source_revision, amount = EXCLUDED.amount,
         account_id = EXCLUDED.account_id, occurred_at = EXCLUDED.occurred_at,
         pipeline = EXCLUDED.pipeline, updated_at = now()
   WHERE EXCLUDED.source_revision > cur.source_revision
  RETURNING transaction_id
)
INSERT INTO bench_upserted SELECT transaction_id FROM upserted;
SELECT :stored, :batch, :destinations, :'variant', :rep, 'upsert',
       round((extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000)::numeric, 3),
       pg_current_wal_insert_lsn() - :'l0'::pg_lsn, :batch, 0;
SELECT clock_timestamp() AS t0, pg_current_wal_insert_lsn() AS l0 \gset

:explain INSERT INTO bench_applied
SELECT c.*, COALESCE(c.account_id, c.transaction_id),
       row_number() OVER (PARTITION BY COALESCE(c.account_id, c.transaction_id) ORDER BY c.first_ord),
       count(*) OVER (PARTITION BY COALESCE(c.account_id, c.transaction_id))
  FROM bench_stored c JOIN bench_upserted USING (transaction_id)
 WHERE c.candidate AND NOT c.conflict AND (c.stored_revision IS NULL OR c.stored_revision < c.source_revision);
-- The destinations are registered (a fast path that writes nothing once they are) and the
-- per-key counters advanced once per key, whatever the number of destinations.
:explain SELECT tidemark_register_destinations(:'dests'::text[]);
:explain WITH sequenced AS (
  INSERT INTO tidemark_partition_sequence AS seq (partition_key, last_sequence)
  SELECT partition_key, count(*) FROM bench_applied GROUP BY partition_key ORDER BY partition_key
  ON CONFLICT (partition_key) DO UPDATE SET last_sequence = seq.last_sequence + EXCLUDED.last_sequence
  RETURNING partition_key, last_sequence
)
INSERT INTO bench_sequenced SELECT * FROM sequenced;
SELECT :stored, :batch, :destinations, :'variant', :rep, 'sequences',
       round((extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000)::numeric, 3),
       pg_current_wal_insert_lsn() - :'l0'::pg_lsn, :batch, 0;
SELECT clock_timestamp() AS t0, pg_current_wal_insert_lsn() AS l0 \gset

-- One change per applied version: its payload has no event id nor sequence (each destination's
-- are derived when it is read).
:explain INSERT INTO bench_payload
SELECT e.transaction_id || ':' || e.source_revision, e.partition_key, e.key_sequence,
       jsonb_build_object(
         'pipeline', :'pipeline'::text,
         'transaction_id', e.transaction_id,
         'source_revision', e.source_revision,
         'amount', e.amount::text,
         'previous_amount', e.stored_amount::text,
         'account_id', e.account_id,
         'previous_account_id', e.stored_account_id,
         'occurred_at', to_char(e.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
         'previous_occurred_at', to_char(e.stored_occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')),
       e.first_ord
  FROM (SELECT a.*, s.last_sequence - a.in_batch + a.nth AS key_sequence
          FROM bench_applied a JOIN bench_sequenced s USING (partition_key)) e;
SELECT count(*) AS log_rows FROM bench_payload \gset
SELECT :stored, :batch, :destinations, :'variant', :rep, 'payload',
       round((extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000)::numeric, 3),
       pg_current_wal_insert_lsn() - :'l0'::pg_lsn, :batch, :log_rows;
SELECT clock_timestamp() AS t0, pg_current_wal_insert_lsn() AS l0 \gset

:explain INSERT INTO tidemark_change (partition_key, key_sequence, entity, event_key, destinations, payload)
SELECT partition_key, key_sequence, 'transaction', event_key, :'dests'::text[], payload FROM bench_payload
 ORDER BY first_ord
ON CONFLICT (entity, event_key) DO NOTHING;
SELECT :stored, :batch, :destinations, :'variant', :rep, 'log',
       round((extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000)::numeric, 3),
       pg_current_wal_insert_lsn() - :'l0'::pg_lsn, :batch, :log_rows;
SELECT clock_timestamp() AS t0, pg_current_wal_insert_lsn() AS l0 \gset

:explain INSERT INTO batch_ledger (pipeline, run_id, batch_no, source, start_position, end_position, input,
                          inserted, updated, unchanged, stale, superseded, duplicate, invalid, conflict)
SELECT :'pipeline', :run_id, 1, 'cost', 'start', 'end', COALESCE(sum(records), 0),
       count(*) FILTER (WHERE candidate AND NOT conflict AND stored_revision IS NULL),
       count(*) FILTER (WHERE candidate AND NOT conflict AND stored_revision < source_revision),
       count(*) FILTER (WHERE candidate AND NOT conflict AND stored_revision = source_revision),
       count(*) FILTER (WHERE candidate AND NOT conflict AND stored_revision > source_revision),
       count(*) FILTER (WHERE NOT candidate AND NOT conflict),
       COALESCE(sum(records - 1) FILTER (WHERE NOT conflict), 0), 0,
       COALESCE(sum(records) FILTER (WHERE conflict), 0)
  FROM bench_stored;
:explain INSERT INTO checkpoint AS cp (pipeline, source, position, run_id)
VALUES (:'pipeline', 'cost', 'cost.csv:' || :batch, :run_id)
ON CONFLICT (pipeline, source) DO UPDATE SET position = EXCLUDED.position, run_id = EXCLUDED.run_id, updated_at = now();
SELECT :stored, :batch, :destinations, :'variant', :rep, 'ledger',
       round((extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000)::numeric, 3),
       pg_current_wal_insert_lsn() - :'l0'::pg_lsn, :batch, :log_rows;
