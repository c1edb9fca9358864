-- Applies one event to a daily_totals version, deduplicated through the inbox of consumer
-- $1 in the same statement (docs/rules.md rules 13, 14), then through the version's record
-- of the transaction ({table}_transactions): the event's revision replaces the recorded one
-- only when it is newer. The event carries the transaction's whole state (amount, day), so
-- an older revision arriving late (another account's queue) is superseded, not lost; it is
-- a filter on state, not on deltas (rule 15). The day totals then move by the difference:
-- the new revision's amount onto its day, the replaced one's off the day it was counted on.
-- A day is the UTC date of occurred_at, or of the event's creation when it has none (its
-- change's, found by position: an outbox id is position * 1024 + the destination's number).
-- $1 consumer, $2 event_id, $3 outbox id, $4 transaction_id, $5 source_revision,
-- $6 amount, $7 occurred_at.
WITH ins AS (
  INSERT INTO inbox (consumer, event_id) VALUES ($1, $2)
  ON CONFLICT (consumer, event_id) DO NOTHING
  RETURNING 1
),
-- The upsert locks the transaction's row, so concurrent appliers (the relay and a rebuild's
-- replay) take turns; replaced_* are read from the locked, latest row.
counted AS (
  INSERT INTO {table}_transactions AS t (transaction_id, source_revision, day, amount)
  SELECT $4, $5::bigint,
         (COALESCE($7::timestamptz, (SELECT created_at FROM tidemark_change WHERE position = $3::bigint / 1024))
          AT TIME ZONE 'UTC')::date,
         $6::numeric
   WHERE EXISTS (SELECT 1 FROM ins)
  ON CONFLICT (transaction_id) DO UPDATE
     SET source_revision = EXCLUDED.source_revision, day = EXCLUDED.day, amount = EXCLUDED.amount,
         replaced_day = t.day, replaced_amount = t.amount
   WHERE t.source_revision < EXCLUDED.source_revision
  RETURNING day, amount, replaced_day, replaced_amount
),
deltas AS (
  SELECT day, amount AS total, 1 AS events FROM counted WHERE day IS NOT NULL
  UNION ALL
  SELECT replaced_day, -replaced_amount, -1 FROM counted WHERE replaced_day IS NOT NULL
)
INSERT INTO {table} AS v (day, total, events)
SELECT day, sum(total), sum(events)
  FROM deltas
 GROUP BY day
 -- Day rows are locked in day order, so two deliveries moving transactions between the same
 -- two days in opposite directions wait for each other instead of deadlocking.
 ORDER BY day
ON CONFLICT (day) DO UPDATE SET total = v.total + EXCLUDED.total, events = v.events + EXCLUDED.events
RETURNING 1
