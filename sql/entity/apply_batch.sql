-- An entity's one write to state and effects per batch, in one statement and one snapshot:
--   1. every staged version is compared with the stored row of its key: same revision and
--      a different payload is a conflict (docs/rules.md rule 2), found before anything is written;
--   2. the candidates that change the stored row are upserted with the revision filter;
--   3. when the pipeline has destinations, each applied change is logged once, in
--      tidemark_change, for all of them (rule 6): one write per change whatever their number,
--      each destination's row (its idempotency key, sequence and payload envelope) being
--      derived at read. The change takes the next key_sequence of its partition under that
--      counter's row lock, which every writer of the key waits on until it commits: per key
--      the changes commit in key_sequence order, which the relay's ingest relies on (rule 12);
--   4. if another transaction wrote one of the keys after this statement's snapshot (two
--      pipelines on one key), the upsert did not do what the verdicts say: the statement
--      fails with SQLSTATE 40001 and the batch is retried on a new snapshot.
-- Filled in once per entity by pipeline/store/entity_sql.cpp from the declaration, never from
-- record data, every identifier quoted; each name below stands for its placeholder (the name
-- in double braces):
--   <stage> <table> <key> <revision>  the stage, the table, the key and revision columns
--   <pipeline_column> <updated_column>  the table's bookkeeping columns
--   <previous>          ",\n t."field" AS tidemark_previous_<i>" per value column (fields, extra)
--   <differs>           whether the stored row's value columns differ from the staged ones
--   <columns>           ", "field"" per value column; <assignments> ", "field" = EXCLUDED."field""
--   <partition>         the partition_by field's value as text, the key when it is absent
--   <entity>            the entity's name, a literal
--   <event_key>         the idempotency key without '<destination>:', from the applied version e.*
--   <payload>           the change's payload, from the applied version e.* (its columns and the
--                       stored row's as tidemark_previous_<i>; no event id or sequence, which
--                       are a destination's and added at read: tidemark_event_payload)
-- The built-in entity differs only in its legacy envelope: bookkeeping column names, event
-- key and payload (docs/entities.md). The statement's own names carry the tidemark_
-- prefix, which no declared name may take.
-- $1 pipeline, $2 destinations as a text[] literal ('{ledger,audit}'; '{}' logs nothing).
-- Returns each conflicting or candidate version's verdict against the stored row, and the
-- number of changes the batch logged.
WITH stored AS (
  SELECT s.*, t.{{revision}} AS tidemark_stored_revision{{previous}},
         COALESCE(t.{{revision}} = s.{{revision}} AND {{differs}}, false) AS tidemark_conflict
    FROM {{stage}} s
    LEFT JOIN {{table}} t ON t.{{key}} = s.{{key}}
),
changes AS (
  SELECT * FROM stored
   WHERE tidemark_candidate AND NOT tidemark_conflict
     AND (tidemark_stored_revision IS NULL OR tidemark_stored_revision < {{revision}})
),
upserted AS (
  INSERT INTO {{table}} AS current_state
         ({{key}}, {{revision}}{{columns}}, {{pipeline_column}}, {{updated_column}})
  SELECT {{key}}, {{revision}}{{columns}}, $1, now() FROM changes
  ON CONFLICT ({{key}}) DO UPDATE
     SET {{revision}} = EXCLUDED.{{revision}}{{assignments}},
         {{pipeline_column}} = EXCLUDED.{{pipeline_column}},
         {{updated_column}} = now()
     -- revision filter: replays and stale revisions are no-ops (docs/rules.md rule 3)
   WHERE EXCLUDED.{{revision}} > current_state.{{revision}}
     -- and the row is still the one this statement's snapshot read (a subquery sees the
     -- snapshot; current_state is the latest version): a row another transaction wrote since
     -- is skipped, counted below, and the batch retried, so no effect carries a stale `previous`
     AND current_state.{{revision}} = (SELECT snap.{{revision}} FROM {{table}} snap WHERE snap.{{key}} = EXCLUDED.{{key}})
  RETURNING {{key}}, xmax = 0 AS tidemark_inserted  -- xmax is 0 only on a row this statement inserted
),
-- Every change was upserted, and inserted exactly when the snapshot saw no stored row. Counted,
-- not joined key by key: each upserted key is a change, and a change whose key the snapshot
-- saw no row of is inserted or skipped, never updated (the guard above), so both counts agree
-- only when every change did what its verdict says. Only when they do not are the keys that
-- did not joined and counted, for the error's message.
verified AS (
  SELECT CASE WHEN c.changes = u.upserted AND c.fresh = u.inserted THEN true
              ELSE tidemark_concurrent_write(c.changes - (
                     SELECT count(*) FROM upserted uk JOIN changes ck USING ({{key}})
                      WHERE uk.tidemark_inserted = (ck.tidemark_stored_revision IS NULL))) END AS tidemark_ok
    FROM (SELECT count(*) AS changes, count(*) FILTER (WHERE tidemark_stored_revision IS NULL) AS fresh
            FROM changes) c,
         (SELECT count(*) AS upserted, count(*) FILTER (WHERE tidemark_inserted) AS inserted FROM upserted) u
),
-- The changes, each with its place in its partition. Not joined with `upserted`: if the upsert
-- skipped a change, `verified` fails the statement and every row written from here is undone.
applied AS (
  SELECT c.*, {{partition}} AS tidemark_partition,
         row_number() OVER (PARTITION BY {{partition}} ORDER BY c.tidemark_ord) AS tidemark_nth,
         count(*) OVER (PARTITION BY {{partition}}) AS tidemark_in_batch
    FROM changes c
),
-- The destinations, registered (numbered: outbox ids are made of their numbers) before any
-- counter is locked, so a writer waiting on another's registration holds no counter the other
-- may wait on. Without destinations it has no row, and nothing below is written, not even a
-- counter.
registered AS (
  SELECT tidemark_register_destinations($2::text[]) WHERE cardinality($2::text[]) > 0
),
sequenced AS (
  -- Counter rows are locked in partition_key order, the order every writer uses, so two
  -- writers cannot deadlock; the aggregate reads `registered` before the first lock.
  INSERT INTO tidemark_partition_sequence AS seq (partition_key, last_sequence)
  SELECT a.tidemark_partition, count(*)
    FROM applied a CROSS JOIN registered
   GROUP BY a.tidemark_partition
   ORDER BY a.tidemark_partition
  ON CONFLICT (partition_key) DO UPDATE
     SET last_sequence = seq.last_sequence + EXCLUDED.last_sequence
  RETURNING partition_key, last_sequence
),
logged AS (
  INSERT INTO tidemark_change (partition_key, key_sequence, entity, event_key, destinations, payload)
  SELECT e.tidemark_partition, e.tidemark_key_sequence, {{entity}}, {{event_key}}, $2::text[], {{payload}}
    FROM (SELECT a.*, s.last_sequence - a.tidemark_in_batch + a.tidemark_nth AS tidemark_key_sequence
            FROM applied a
            JOIN sequenced s ON s.partition_key = a.tidemark_partition) e
   ORDER BY e.tidemark_ord
  -- a replay cannot log a change twice (docs/rules.md rule 6)
  ON CONFLICT (entity, event_key) DO NOTHING
  RETURNING 1
)
SELECT tidemark_ord AS ord,
       CASE WHEN tidemark_conflict THEN 'conflict'
            WHEN tidemark_stored_revision IS NULL THEN 'inserted'
            WHEN tidemark_stored_revision < {{revision}} THEN 'updated'
            WHEN tidemark_stored_revision = {{revision}} THEN 'unchanged'
            ELSE 'stale' END AS verdict,
       (SELECT count(*) FROM logged) AS changes_logged{{conflict_columns}}
  FROM stored, verified
 WHERE verified.tidemark_ok AND (tidemark_conflict OR tidemark_candidate)
