-- daily_totals keeps its own record of each transaction (the revision it counts,
-- its day and amount: sql/views/daily_totals_create.sql), so a revision no longer looks up
-- the previous revision's outbox row, and the outbox loses the index that lookup and the
-- rebuilds' scans used (outbox_destination_partition, 0004): one index less on every
-- commit. Rebuilds read a destination's outbox rows once, by its primary key or a scan.
--
-- Every daily_totals version that is not retired gets the table, filled with what that
-- version has counted: per transaction, the newest revision among the events it applied
-- (an inbox row of the version; or, for a live version, delivered: the relay delivers a
-- view event once every receiving version applied it, and the inbox cleanup deletes only
-- rows of applied events. A building version may not have replayed a delivered event yet;
-- its inbox rows are recent, so the cleanup has not touched them). The day is the one its apply computed: occurred_at, else the event's creation.
-- The day totals stay as they are: a later revision takes off exactly what the previous
-- code would have (the counted revision's amount, on its day); only the events below
-- are applied as that code would have.
DO $migration$
DECLARE
  version_table text;
  version_status text;
BEGIN
  FOR version_table, version_status IN
    SELECT 'daily_totals_v' || version, status FROM views WHERE name = 'daily_totals' AND status <> 'retired'
  LOOP
    EXECUTE format($create$
      CREATE TABLE %I (
        transaction_id  text PRIMARY KEY,
        source_revision bigint NOT NULL,
        day             date,
        amount          numeric NOT NULL,
        replaced_day    date,
        replaced_amount numeric
      )$create$, version_table || '_transactions');
    -- The conditions are those an event passes to be applied (pipeline/views/view.cpp
    -- parse_view_event).
    EXECUTE format($fill$
      INSERT INTO %I (transaction_id, source_revision, day, amount)
      SELECT DISTINCT ON (o.payload->>'transaction_id')
             o.payload->>'transaction_id', (o.payload->>'source_revision')::bigint,
             (COALESCE(CASE WHEN jsonb_typeof(o.payload->'occurred_at') = 'string'
                            THEN (o.payload->>'occurred_at')::timestamptz END,
                       o.created_at) AT TIME ZONE 'UTC')::date,
             (o.payload->>'amount')::numeric
        FROM outbox o
       WHERE o.destination = 'daily_totals'
         AND jsonb_typeof(o.payload->'transaction_id') = 'string'
         AND jsonb_typeof(o.payload->'amount') = 'string'
         AND jsonb_typeof(o.payload->'source_revision') = 'number'
         AND o.partition_key <> '' AND o.sequence > 0
         AND ((o.status = 'delivered' AND %L = 'live')
              OR EXISTS (SELECT 1 FROM inbox i WHERE i.consumer = %L AND i.event_id = o.idempotency_key))
       ORDER BY o.payload->>'transaction_id', (o.payload->>'source_revision')::bigint DESC
      $fill$, version_table || '_transactions', version_status, version_table);
    -- An event this version has not applied, older than the revision it counts (two
    -- revisions of a moved transaction delivered out of order across accounts): the new
    -- apply would drop it as superseded, but the totals, made by the previous code, still
    -- wait for its delta. It is applied here as that code did (its amount onto its day, the
    -- previous amount off the day of the transaction's previous event) and recorded in the
    -- inbox, so that its delivery is a redelivery.
    EXECUTE format($stranded$
      WITH stranded AS (
        SELECT o.idempotency_key, o.created_at, o.payload,
               (o.payload->>'source_revision')::bigint AS revision
          FROM outbox o
          JOIN %1$I t ON t.transaction_id = o.payload->>'transaction_id'
         WHERE o.destination = 'daily_totals'
           AND jsonb_typeof(o.payload->'amount') = 'string'
           AND jsonb_typeof(o.payload->'source_revision') = 'number'
           AND o.partition_key <> '' AND o.sequence > 0
           AND (o.payload->>'source_revision')::bigint < t.source_revision
           AND NOT (o.status = 'delivered' AND %3$L = 'live')
           AND NOT EXISTS (SELECT 1 FROM inbox i WHERE i.consumer = %2$L AND i.event_id = o.idempotency_key)
      ),
      recorded AS (
        INSERT INTO inbox (consumer, event_id) SELECT %2$L, idempotency_key FROM stranded
        ON CONFLICT (consumer, event_id) DO NOTHING
      ),
      deltas AS (
        SELECT COALESCE(CASE WHEN jsonb_typeof(payload->'occurred_at') = 'string'
                             THEN (payload->>'occurred_at')::timestamptz END, created_at) AS happened,
               (payload->>'amount')::numeric AS total, 1 AS events
          FROM stranded
        UNION ALL
        SELECT COALESCE(CASE WHEN jsonb_typeof(s.payload->'previous_occurred_at') = 'string'
                             THEN (s.payload->>'previous_occurred_at')::timestamptz END,
                        (SELECT p.created_at FROM outbox p
                          WHERE p.destination = 'daily_totals'
                            AND p.partition_key = COALESCE(s.payload->>'previous_account_id', s.payload->>'transaction_id')
                            AND p.payload->>'transaction_id' = s.payload->>'transaction_id'
                            AND (p.payload->>'source_revision')::bigint < s.revision
                          ORDER BY (p.payload->>'source_revision')::bigint DESC
                          LIMIT 1)),
               -((s.payload->>'previous_amount')::numeric), -1
          FROM stranded s
         WHERE jsonb_typeof(s.payload->'previous_amount') = 'string'
      )
      INSERT INTO %4$I AS v (day, total, events)
      SELECT (happened AT TIME ZONE 'UTC')::date, sum(total), sum(events)
        FROM deltas
       WHERE happened IS NOT NULL
       GROUP BY 1
      ON CONFLICT (day) DO UPDATE SET total = v.total + EXCLUDED.total, events = v.events + EXCLUDED.events
      $stranded$, version_table || '_transactions', version_table, version_status, version_table);
  END LOOP;
END
$migration$;

-- IF EXISTS: 0015 may have dropped it with the relay's other indexes.
DROP INDEX IF EXISTS outbox_destination_partition;
