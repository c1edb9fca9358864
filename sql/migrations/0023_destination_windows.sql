-- A window per destination. A destination may set its own max_in_flight (the
-- relay's stays the whole relay's), so that a slow destination cannot hold every place. The
-- claim therefore takes up to a limit per destination (p_limits, in the order of
-- p_destinations) besides the limit across them (p_max_events, by due time as before), or a
-- capped destination's claims would fill the relay's queue and go stale there. The function
-- is otherwise 0020's, with 0022's settings.
DROP FUNCTION tidemark_relay_claim(text[], bigint, bigint, bigint[], int[]);

CREATE FUNCTION tidemark_relay_claim(p_destinations text[], p_limits bigint[], p_max_events bigint,
                                     p_lease_ms bigint, p_delivered bigint[], p_delivered_attempts int[])
RETURNS TABLE (id bigint, destination text, idempotency_key text, partition_key text, sequence bigint,
               payload text, attempts int)
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan SET jit = off
AS $$
#variable_conflict use_column
DECLARE
  claimed bigint := 0;
BEGIN
  IF cardinality(p_limits) IS DISTINCT FROM cardinality(p_destinations) THEN
    RAISE EXCEPTION 'tidemark_relay_claim: % limits for % destinations', cardinality(p_limits), cardinality(p_destinations);
  END IF;
  PERFORM set_config('tidemark.outbox_heads', 'kept', true);
  IF cardinality(p_delivered) > 0 THEN
    PERFORM tidemark_outbox_lock_heads(p_delivered);
    -- A delivered head moves on to the next pending sequence of its key, with that event's
    -- due time and attempts. The statement's snapshot is from before its own UPDATE, so the
    -- rows delivered now are left out by id. A delivered event that is not its key's head (a
    -- lower one was re-driven meanwhile) leaves the head where it is.
    WITH delivered AS (
      UPDATE outbox o
         SET status = 'delivered', delivered_at = now(), last_error = NULL,
             attempts = greatest(o.attempts, d.attempt)
        FROM unnest(p_delivered, p_delivered_attempts) AS d(id, attempt)
       WHERE o.id = d.id AND o.status = 'pending'
      RETURNING o.destination, o.partition_key, o.sequence
    )
    UPDATE tidemark_destination_sequence h
       SET (head_sequence, head_due_at, head_attempts) =
           (SELECT n.sequence, n.next_attempt_at, n.attempts
              FROM outbox n
             WHERE n.destination = h.destination AND n.partition_key = h.partition_key
               AND n.status = 'pending' AND n.sequence > h.head_sequence
               AND n.id <> ALL (p_delivered)
             ORDER BY n.sequence
             LIMIT 1)
      FROM (SELECT DISTINCT d.destination, d.partition_key, d.sequence FROM delivered d) k
     WHERE h.destination = k.destination AND h.partition_key = k.partition_key
       AND h.head_sequence = k.sequence;
  END IF;
  IF p_max_events <= 0 THEN
    PERFORM set_config('tidemark.outbox_heads', '', true);
    RETURN;
  END IF;

  RETURN QUERY
  WITH heads AS (
    -- Up to its limit of due heads per destination and p_max_events in all, locked; those
    -- that another relay (or a writer committing new rows of the key) holds are skipped,
    -- never waited for.
    SELECT h.destination, h.partition_key, h.head_sequence, h.head_attempts
      FROM unnest(p_destinations, p_limits) AS d(name, max_events)
     CROSS JOIN LATERAL (
       SELECT h.destination, h.partition_key, h.head_sequence, h.head_attempts, h.head_due_at
         FROM tidemark_destination_sequence h
        WHERE h.destination = d.name AND h.head_sequence IS NOT NULL AND h.head_due_at <= now()
        ORDER BY h.head_due_at
        LIMIT d.max_events
          FOR UPDATE SKIP LOCKED) h
     ORDER BY h.head_due_at
     LIMIT p_max_events
  ),
  due AS (
    -- The head's outbox row; the first pending one from the head on, so that a head whose
    -- row went (deleted by hand) heals itself. NULL when this statement's snapshot sees none:
    -- a head locked here is its newest version, which another claim may have moved, after
    -- this snapshot, to a row a writer committed after it too. Such a head keeps its
    -- sequence and is due again a lease later, like a claimed one: a later claim's snapshot
    -- sees its row. Setting it to NULL would strand that row for good (the next batch of the
    -- key makes its own first row the head). A head with truly nothing from it on (its row
    -- skipped or deleted) is looked at once a lease, never on every claim. The attempt is
    -- the head's next one; a head that healed to a later row starts from that row's count.
    SELECT hd.destination, hd.partition_key, n.id, n.sequence,
           CASE WHEN n.sequence = hd.head_sequence THEN coalesce(hd.head_attempts, 0) ELSE n.attempts END + 1
             AS attempt
      FROM heads hd
      LEFT JOIN LATERAL (
        SELECT o.id, o.sequence, o.attempts
          FROM outbox o
         WHERE o.destination = hd.destination AND o.partition_key = hd.partition_key
           AND o.status = 'pending' AND o.sequence >= hd.head_sequence
         ORDER BY o.sequence
         LIMIT 1) n ON true
  ),
  moved AS (
    -- The lease: the head is due again when it runs out, and counts the attempt. The outbox
    -- row is not written: its mark records the attempt.
    UPDATE tidemark_destination_sequence h
       SET head_sequence = COALESCE(due.sequence, h.head_sequence),
           head_due_at = now() + p_lease_ms * interval '1 millisecond',
           head_attempts = CASE WHEN due.id IS NULL THEN h.head_attempts ELSE due.attempt END
      FROM due
     WHERE h.destination = due.destination AND h.partition_key = due.partition_key
  )
  SELECT o.id, o.destination, o.idempotency_key, o.partition_key, o.sequence, o.payload::text, due.attempt
    FROM due
    JOIN outbox o ON o.id = due.id;
  GET DIAGNOSTICS claimed = ROW_COUNT;

  IF claimed < p_max_events THEN
    -- Rows without an order to keep (outbox_unordered_due) have no head: their lease is on
    -- the row, by due time. Within each destination's limit, not less what its heads took:
    -- such rows are left from before sequences existed (migration 0005), and a claim that
    -- takes up to twice a destination's limit of them only queues them longer (the relay's
    -- window, not the claim, bounds what is in flight).
    RETURN QUERY
    UPDATE outbox o
       SET attempts = o.attempts + 1,
           next_attempt_at = now() + p_lease_ms * interval '1 millisecond'
      FROM (SELECT u.id
              FROM unnest(p_destinations, p_limits) AS d(name, max_events)
             CROSS JOIN LATERAL (
               SELECT u.id, u.next_attempt_at
                 FROM outbox u
                WHERE u.status = 'pending' AND (u.partition_key IS NULL OR u.sequence IS NULL)
                  AND u.next_attempt_at <= now() AND u.destination = d.name
                ORDER BY u.next_attempt_at
                LIMIT d.max_events
                  FOR UPDATE SKIP LOCKED) u
             ORDER BY u.next_attempt_at
             LIMIT p_max_events - claimed) due
     WHERE o.id = due.id
    RETURNING o.id, o.destination, o.idempotency_key, o.partition_key, o.sequence, o.payload::text, o.attempts;
  END IF;
  PERFORM set_config('tidemark.outbox_heads', '', true);
END
$$;
