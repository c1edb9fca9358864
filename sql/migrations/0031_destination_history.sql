-- A destination's whole history in one pass (views/history.sql, views/account_balance_catch_up.sql:
-- a view rebuild replays it). The `outbox` view numbers each event by counting its key's changes
-- between it and the cursor, which suits a page of events (relay/list.sql reads only its own)
-- but is quadratic in a key's history when every event of a destination is read. Here one
-- destination's events are numbered by running counts over its keys' streams instead: the same
-- numbers (migrated changes keep their own and are not counted; dead letters keep theirs).
CREATE FUNCTION tidemark_destination_history(p_destination text)
RETURNS TABLE (id bigint, idempotency_key text, partition_key text, sequence bigint, payload jsonb)
LANGUAGE sql STABLE AS $$
  SELECT e.position * 1024 + e.number,
         e.key,
         tidemark_event_partition(e.partition_key, e.stored_key, e.stored_sequence),
         e.sequence,
         tidemark_event_payload(e.payload, e.stored_key, e.key, e.sequence)
    FROM (SELECT r.*,
                 CASE WHEN r.lettered THEN r.letter_sequence
                      WHEN r.ahead THEN tidemark_event_sequence(r.stored_key, r.stored_sequence, r.last_sequence + r.counted_to)
                      ELSE tidemark_event_sequence(r.stored_key, r.stored_sequence,
                                                   r.last_sequence - (r.counted_side - r.counted_to)) END AS sequence
            FROM (SELECT c.position, t.number, c.partition_key, c.payload,
                         coalesce(c.idempotency_key, t.name || ':' || c.event_key) AS key,
                         c.idempotency_key AS stored_key, c.sequence AS stored_sequence,
                         coalesce(k.last_sequence, 0) AS last_sequence,
                         l.position IS NOT NULL AS lettered, l.sequence AS letter_sequence,
                         c.key_sequence > coalesce(k.through, 0) AS ahead,
                         count(*) FILTER (WHERE c.idempotency_key IS NULL) OVER running AS counted_to,
                         count(*) FILTER (WHERE c.idempotency_key IS NULL)
                           OVER (PARTITION BY c.partition_key, c.key_sequence > coalesce(k.through, 0)) AS counted_side
                    FROM tidemark_change c
                    JOIN tidemark_destination t ON t.name = p_destination
                    LEFT JOIN tidemark_cursor k ON k.destination = t.name AND k.partition_key = c.partition_key
                    LEFT JOIN tidemark_dead_letter l ON l.destination = t.name AND l.position = c.position
                   WHERE t.name = ANY (c.destinations)
                  WINDOW running AS (PARTITION BY c.partition_key, c.key_sequence > coalesce(k.through, 0)
                                     ORDER BY c.key_sequence)) r) e
$$;
