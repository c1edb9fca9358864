-- The hand-written baseline ("B") of the throughput benchmark: what one batch costs in
-- PostgreSQL when a person writes the SQL by hand. run_bench.sh runs it once per batch in
-- one psql session, inside BEGIN … COMMIT, right after
--   \copy bench_stage (transaction_id, source_revision, amount, account_id, occurred_at) FROM 'batch_k.csv' (FORMAT csv)
-- It has the same effects as `tidemark run` with one destination (`ledger`): in-batch
-- grouping (conflicts to quarantine, highest revision per key), the stored-conflict check,
-- the revision-filtered upsert, per-account sequences, each applied change logged once in
-- the change log for the destination (its idempotency key, sequence and event id derived at
-- read), the ledger row and the checkpoint, all in ONE statement (one snapshot, one round trip).
-- It does not validate: the generated dataset holds no invalid records, and typed COPY
-- into numeric(12,2)/timestamptz would reject (not quarantine) a malformed one.
-- psql variables: pipeline, run_id, batch_no, source, start_position, end_position,
-- end_file, end_offset, csv_header.
WITH versions AS (
  -- One row per (key, revision). A group whose records disagree on the payload is an
  -- in-batch conflict; min/max/count are hash-aggregable, unlike count(DISTINCT row).
  SELECT transaction_id, source_revision,
         min(ord) AS first_ord,
         count(*) AS records,
         min(amount) AS amount,
         min(account_id COLLATE "C") AS account_id,
         min(occurred_at) AS occurred_at,
         (min(amount) <> max(amount)
          OR min(account_id COLLATE "C") <> max(account_id COLLATE "C")
          OR count(account_id) NOT IN (0, count(*))
          OR min(occurred_at) <> max(occurred_at)
          OR count(occurred_at) NOT IN (0, count(*))) AS batch_conflict,
         source_revision = max(source_revision) OVER (PARTITION BY transaction_id) AS candidate
    FROM bench_stage
   GROUP BY transaction_id, source_revision
),
stored AS (
  SELECT v.*,
         t.source_revision AS stored_revision, t.amount AS stored_amount,
         t.account_id AS stored_account_id, t.occurred_at AS stored_occurred_at,
         v.batch_conflict
           OR COALESCE(t.source_revision = v.source_revision
                       AND (t.amount, t.account_id, t.occurred_at)
                           IS DISTINCT FROM (v.amount, v.account_id, v.occurred_at), false) AS conflict
    FROM versions v
    LEFT JOIN transaction_state t USING (transaction_id)
),
changes AS (
  SELECT * FROM stored
   WHERE candidate AND NOT conflict AND (stored_revision IS NULL OR stored_revision < source_revision)
),
upserted AS (
  INSERT INTO transaction_state AS cur (transaction_id, source_revision, amount, account_id, occurred_at, pipeline)
  SELECT transaction_id, source_revision, amount, account_id, occurred_at, :'pipeline' FROM changes
  ON CONFLICT (transaction_id) DO UPDATE
     SET source_revision = EXCLUDED.source_revision, amount = EXCLUDED.amount,
         account_id = EXCLUDED.account_id, occurred_at = EXCLUDED.occurred_at,
         pipeline = EXCLUDED.pipeline, updated_at = now()
   WHERE EXCLUDED.source_revision > cur.source_revision
  RETURNING transaction_id
),
applied AS (
  SELECT c.*, COALESCE(c.account_id, c.transaction_id) AS partition_key,
         row_number() OVER (PARTITION BY COALESCE(c.account_id, c.transaction_id) ORDER BY c.first_ord) AS nth,
         count(*) OVER (PARTITION BY COALESCE(c.account_id, c.transaction_id)) AS in_batch
    FROM changes c
    JOIN upserted USING (transaction_id)
),
registered AS (
  -- As sql/entity/apply_batch.sql: the destination numbered before any counter is locked.
  SELECT tidemark_register_destinations('{ledger}')
),
sequenced AS (
  -- One counter per account, locked in partition_key order as every writer does.
  INSERT INTO tidemark_partition_sequence AS seq (partition_key, last_sequence)
  SELECT a.partition_key, count(*) FROM applied a CROSS JOIN registered GROUP BY a.partition_key ORDER BY a.partition_key
  ON CONFLICT (partition_key) DO UPDATE SET last_sequence = seq.last_sequence + EXCLUDED.last_sequence
  RETURNING partition_key, last_sequence
),
logged AS (
  INSERT INTO tidemark_change (partition_key, key_sequence, entity, event_key, destinations, payload)
  SELECT e.partition_key, e.key_sequence, 'transaction', e.transaction_id || ':' || e.source_revision, '{ledger}',
         jsonb_build_object(
           'pipeline', :'pipeline'::text,
           'transaction_id', e.transaction_id,
           'source_revision', e.source_revision,
           'amount', e.amount::text,
           'previous_amount', e.stored_amount::text,
           'account_id', e.account_id,
           'previous_account_id', e.stored_account_id,
           'occurred_at', to_char(e.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
           'previous_occurred_at', to_char(e.stored_occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
    FROM (SELECT a.*, s.last_sequence - a.in_batch + a.nth AS key_sequence
            FROM applied a JOIN sequenced s USING (partition_key)) e
   ORDER BY e.first_ord
  ON CONFLICT (entity, event_key) DO NOTHING
  RETURNING 1
),
quarantined AS (
  -- Every record of a conflicting version, in-batch or against the stored row.
  INSERT INTO quarantine (pipeline, source, reason, detail, transaction_id, source_revision, raw, format,
                          decode_context, position, run_id)
  SELECT :'pipeline', :'source', 'conflict',
         'transaction_id ' || r.transaction_id || ' revision ' || r.source_revision ||
           ' has a different payload than another record or the stored row of the same revision',
         r.transaction_id, r.source_revision,
         concat_ws(',', r.transaction_id, r.source_revision, r.amount, r.account_id,
                   to_char(r.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
         'csv', :'csv_header', :'start_position' || ' record ' || r.ord, :run_id
    FROM bench_stage r
    JOIN stored v USING (transaction_id, source_revision)
   WHERE v.conflict
   ORDER BY r.ord
  ON CONFLICT DO NOTHING  -- quarantine each record once (unique index quarantine_once)
  RETURNING 1
),
counts AS (
  SELECT COALESCE(sum(records), 0) AS input,
         count(*) FILTER (WHERE candidate AND NOT conflict AND stored_revision IS NULL) AS inserted,
         count(*) FILTER (WHERE candidate AND NOT conflict AND stored_revision < source_revision) AS updated,
         count(*) FILTER (WHERE candidate AND NOT conflict AND stored_revision = source_revision) AS unchanged,
         count(*) FILTER (WHERE candidate AND NOT conflict AND stored_revision > source_revision) AS stale,
         count(*) FILTER (WHERE NOT candidate AND NOT conflict) AS superseded,
         COALESCE(sum(records - 1) FILTER (WHERE NOT conflict), 0) AS duplicate,
         COALESCE(sum(records) FILTER (WHERE conflict), 0) AS conflict
    FROM stored
),
ledger AS (
  INSERT INTO batch_ledger (pipeline, run_id, batch_no, source, start_position, end_position, input,
                            inserted, updated, unchanged, stale, superseded, duplicate, invalid, conflict)
  SELECT :'pipeline', :run_id, :batch_no, :'source', :'start_position', :'end_position', input,
         inserted, updated, unchanged, stale, superseded, duplicate, 0, conflict
    FROM counts
  RETURNING 1
),
checkpointed AS (
  INSERT INTO checkpoint AS cp (pipeline, source, position, run_id)
  VALUES (:'pipeline', :'source', :'end_position', :run_id)
  ON CONFLICT (pipeline, source) DO UPDATE
     SET position = EXCLUDED.position, run_id = EXCLUDED.run_id, updated_at = now()
   -- never backwards, in the file source's order: the name before the last ':', then the offset
   WHERE (:'end_file' COLLATE "C", :end_offset)
         > (substring(cp.position from '^(.*):') COLLATE "C", substring(cp.position from '[^:]*$')::bigint)
  RETURNING 1
)
SELECT (SELECT count(*) FROM logged) AS changes_logged,
       (SELECT count(*) FROM quarantined) AS quarantined,
       (SELECT count(*) FROM ledger) AS ledger_rows,
       (SELECT count(*) FROM checkpointed) AS checkpoints;
