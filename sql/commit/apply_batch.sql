-- The batch's one write to state and effects, in one statement and one snapshot:
--   1. every staged version is compared with the stored row of its key: same revision and
--      a different payload is a conflict (docs/rules.md rule 2), found before anything is written;
--   2. the candidates that change the stored row are upserted with the revision filter;
--   3. each applied change takes, for every destination, the next sequence of its
--      (destination, partition key) under that counter's row lock (rule 12) and writes one
--      outbox row per destination (rule 6);
--   4. if another transaction wrote one of the keys after this statement's snapshot (two
--      pipelines on one key), the upsert did not do what the verdicts say: the statement
--      fails with SQLSTATE 40001 and the batch is retried on a new snapshot.
-- $1 pipeline, $2 destinations as a text[] literal ('{ledger,audit}').
-- Returns each conflicting or candidate version's verdict against the stored row.
WITH stored AS (
  SELECT s.ord, s.candidate, s.transaction_id, s.source_revision, s.amount, s.account_id, s.occurred_at,
         t.source_revision AS stored_revision, t.amount AS stored_amount,
         t.account_id AS stored_account_id, t.occurred_at AS stored_occurred_at,
         COALESCE(t.source_revision = s.source_revision
                  AND (t.amount, t.account_id, t.occurred_at) IS DISTINCT FROM (s.amount, s.account_id, s.occurred_at),
                  false) AS conflict
    FROM tidemark_stage s
    LEFT JOIN transaction_state t USING (transaction_id)
),
changes AS (
  SELECT * FROM stored
   WHERE candidate AND NOT conflict AND (stored_revision IS NULL OR stored_revision < source_revision)
),
upserted AS (
  INSERT INTO transaction_state AS current_state
         (transaction_id, source_revision, amount, account_id, occurred_at, pipeline)
  SELECT transaction_id, source_revision, amount, account_id, occurred_at, $1 FROM changes
  ON CONFLICT (transaction_id) DO UPDATE
     SET source_revision = EXCLUDED.source_revision,
         amount = EXCLUDED.amount,
         account_id = EXCLUDED.account_id,
         occurred_at = EXCLUDED.occurred_at,
         pipeline = EXCLUDED.pipeline,
         updated_at = now()
     -- revision filter: replays and stale revisions are no-ops (docs/rules.md rule 3)
   WHERE EXCLUDED.source_revision > current_state.source_revision
  RETURNING transaction_id, xmax = 0 AS inserted  -- xmax is 0 only on a row this statement inserted
),
-- Every change was upserted, and inserted exactly when the snapshot saw no stored row.
verified AS (
  SELECT CASE WHEN surprises > 0 THEN tidemark_concurrent_write(surprises) ELSE true END AS ok
    FROM (SELECT (SELECT count(*) FROM changes) - count(*) AS surprises
            FROM upserted u JOIN changes c USING (transaction_id)
           WHERE u.inserted = (c.stored_revision IS NULL)) s
),
applied AS (
  SELECT c.*, COALESCE(c.account_id, c.transaction_id) AS partition_key,
         row_number() OVER (PARTITION BY COALESCE(c.account_id, c.transaction_id) ORDER BY c.ord) AS nth,
         count(*) OVER (PARTITION BY COALESCE(c.account_id, c.transaction_id)) AS in_batch
    FROM changes c
    JOIN upserted USING (transaction_id)
),
sequenced AS (
  INSERT INTO tidemark_destination_sequence AS seq (destination, partition_key, last_sequence)
  SELECT d.destination, a.partition_key, count(*)
    FROM applied a CROSS JOIN unnest($2::text[]) AS d(destination)
   GROUP BY d.destination, a.partition_key
  ON CONFLICT (destination, partition_key) DO UPDATE SET last_sequence = seq.last_sequence + EXCLUDED.last_sequence
  RETURNING destination, partition_key, last_sequence
),
outboxed AS (
  INSERT INTO outbox (destination, idempotency_key, partition_key, sequence, payload)
  SELECT d.destination, e.event_id, e.partition_key, e.sequence,
         jsonb_build_object(
           'event_id', e.event_id,
           'pipeline', $1::text,
           'transaction_id', e.transaction_id,
           'source_revision', e.source_revision,
           'amount', e.amount::text,
           'previous_amount', e.stored_amount::text,
           'account_id', e.account_id,
           'previous_account_id', e.stored_account_id,
           'occurred_at', to_char(e.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
           'previous_occurred_at', to_char(e.stored_occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
           'sequence', e.sequence)
    FROM unnest($2::text[]) AS d(destination)
   CROSS JOIN LATERAL (
     SELECT a.*, d.destination || ':' || a.transaction_id || ':' || a.source_revision AS event_id,
            s.last_sequence - a.in_batch + a.nth AS sequence
       FROM applied a
       JOIN sequenced s ON s.destination = d.destination AND s.partition_key = a.partition_key) e
   ORDER BY e.ord, d.destination
  -- a replay cannot create a second effect (docs/rules.md rule 6)
  ON CONFLICT (idempotency_key) DO NOTHING
  RETURNING 1
)
SELECT ord,
       CASE WHEN conflict THEN 'conflict'
            WHEN stored_revision IS NULL THEN 'inserted'
            WHEN stored_revision < source_revision THEN 'updated'
            WHEN stored_revision = source_revision THEN 'unchanged'
            ELSE 'stale' END AS verdict,
       (SELECT count(*) FROM outboxed) AS outbox_rows
  FROM stored, verified
 WHERE verified.ok AND (conflict OR candidate)
