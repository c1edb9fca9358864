-- Applies one event to a daily_totals version, deduplicated through the inbox of consumer
-- $1 in the same statement (docs/rules.md rules 13, 14): the delta is written only when this
-- statement inserted the (consumer, event_id) row. A revision adds its amount to its day
-- and takes the previous amount off the previous revision's day, which may differ.
-- A day is the UTC date of occurred_at, or of the event's creation when it has none; for
-- the previous revision, that is the creation of the transaction's previous event.
-- $1 consumer, $2 event_id, $3 outbox id, $4 destination, $5 transaction_id,
-- $6 source_revision, $7 amount, $8 occurred_at, $9 previous_amount,
-- $10 previous_occurred_at, $11 previous partition key.
WITH ins AS (
  INSERT INTO inbox (consumer, event_id) VALUES ($1, $2)
  ON CONFLICT (consumer, event_id) DO NOTHING
  RETURNING 1
),
deltas AS (
  SELECT COALESCE($8::timestamptz, (SELECT created_at FROM outbox WHERE id = $3::bigint)) AS happened,
         $7::numeric AS total, 1 AS events
  UNION ALL
  SELECT COALESCE($10::timestamptz,
                  (SELECT p.created_at FROM outbox p
                    WHERE p.destination = $4 AND p.partition_key = $11
                      AND p.payload->>'transaction_id' = $5
                      AND (p.payload->>'source_revision')::bigint < $6::bigint
                    ORDER BY (p.payload->>'source_revision')::bigint DESC
                    LIMIT 1)),
         -($9::numeric), -1
   WHERE $9::numeric IS NOT NULL
)
INSERT INTO {table} AS v (day, total, events)
SELECT (happened AT TIME ZONE 'UTC')::date, sum(total), sum(events)
  FROM deltas
 WHERE EXISTS (SELECT 1 FROM ins) AND happened IS NOT NULL
 GROUP BY 1
ON CONFLICT (day) DO UPDATE SET total = v.total + EXCLUDED.total, events = v.events + EXCLUDED.events
RETURNING 1
