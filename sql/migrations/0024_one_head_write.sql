-- A head is written once per relay call. Before, a delivered head moved on to
-- its key's next pending sequence in one statement, and the claim then leased that successor
-- in another: two versions of the same row in one transaction, each non-HOT (head_due_at is
-- indexed by destination_sequence_due), so two new entries in each of the table's indexes and
-- two in the WAL, per event. Now the move and the claim are one statement: the delivered
-- heads' successors compete with the other due heads by due time, within each destination's
-- limit and p_max_events as before, and every head is written once, with its lease when it is
-- claimed and with its successor's due time when it is not. What a call claims is what the two
-- statements claimed: the moved heads were candidates of the second statement with their
-- successors' due times, which is the order they are ranked in here.
CREATE OR REPLACE FUNCTION tidemark_relay_claim(p_destinations text[], p_limits bigint[], p_max_events bigint,
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
  v_max_events bigint := greatest(p_max_events, 0);
  v_lease_end timestamptz := now() + p_lease_ms * interval '1 millisecond';
BEGIN
  IF cardinality(p_limits) IS DISTINCT FROM cardinality(p_destinations) THEN
    RAISE EXCEPTION 'tidemark_relay_claim: % limits for % destinations', cardinality(p_limits), cardinality(p_destinations);
  END IF;
  PERFORM set_config('tidemark.outbox_heads', 'kept', true);
  IF cardinality(p_delivered) > 0 THEN
    PERFORM tidemark_outbox_lock_heads(p_delivered);
  END IF;

  RETURN QUERY
  WITH delivered AS (
    -- The delivered events, marked with the attempt that reached the destination.
    UPDATE outbox o
       SET status = 'delivered', delivered_at = now(), last_error = NULL,
           attempts = greatest(o.attempts, d.attempt)
      FROM unnest(p_delivered, p_delivered_attempts) AS d(id, attempt)
     WHERE o.id = d.id AND o.status = 'pending'
    RETURNING o.destination, o.partition_key, o.sequence
  ),
  moving AS (
    -- A delivered head moves on to the next pending sequence of its key (NULL: none). The
    -- statement's snapshot is from before its own UPDATE, so the rows delivered now are left
    -- out by id. A delivered event that is not its key's head (a lower one was re-driven
    -- meanwhile) leaves the head where it is. These heads are locked (above, in key order).
    SELECT h.destination, h.partition_key, n.id, n.sequence, n.next_attempt_at, n.attempts
      FROM (SELECT DISTINCT d.destination, d.partition_key, d.sequence FROM delivered d) k
      JOIN tidemark_destination_sequence h
        ON h.destination = k.destination AND h.partition_key = k.partition_key AND h.head_sequence = k.sequence
      LEFT JOIN LATERAL (
        SELECT n.id, n.sequence, n.next_attempt_at, n.attempts
          FROM outbox n
         WHERE n.destination = h.destination AND n.partition_key = h.partition_key
           AND n.status = 'pending' AND n.sequence > h.head_sequence
           AND n.id <> ALL (p_delivered)
         ORDER BY n.sequence
         LIMIT 1) n ON true
  ),
  waiting AS (
    -- Up to its limit of due heads per destination, locked; those that another relay (or a
    -- writer committing new rows of the key) holds are skipped, never waited for.
    SELECT h.destination, h.partition_key, h.head_sequence, h.head_attempts, h.head_due_at
      FROM unnest(p_destinations, p_limits) AS d(name, max_events)
     CROSS JOIN LATERAL (
       SELECT h.destination, h.partition_key, h.head_sequence, h.head_attempts, h.head_due_at
         FROM tidemark_destination_sequence h
        WHERE h.destination = d.name AND h.head_sequence IS NOT NULL AND h.head_due_at <= now()
        ORDER BY h.head_due_at
        LIMIT least(greatest(d.max_events, 0), v_max_events)
          FOR UPDATE SKIP LOCKED) h
  ),
  candidates AS (
    -- Every head this call may write, once: the moved ones, and the due ones of other keys (a
    -- moved head's old version, due when its lease ran out before its answer came, is not one).
    SELECT DISTINCT ON (c.destination, c.partition_key) c.*
      FROM (SELECT m.destination, m.partition_key, true AS moved, m.next_attempt_at AS due_at,
                   m.id, m.sequence, m.attempts, NULL::int AS head_attempts
              FROM moving m
            UNION ALL
            SELECT w.destination, w.partition_key, false, w.head_due_at,
                   NULL::bigint, w.head_sequence, NULL::int, w.head_attempts
              FROM waiting w) c
     ORDER BY c.destination, c.partition_key, c.moved DESC
  ),
  ranked AS (
    -- The due ones by due time, up to each destination's limit (a moved head of a destination
    -- this relay does not serve is only moved) ...
    SELECT c.*,
           coalesce(c.due_at <= now()
                    AND row_number() OVER (PARTITION BY c.destination, c.due_at <= now() ORDER BY c.due_at)
                        <= p_limits[array_position(p_destinations, c.destination)], false) AS within
      FROM candidates c
  ),
  picked AS (
    -- ... and p_max_events in all.
    SELECT r.*,
           r.within AND row_number() OVER (PARTITION BY r.within ORDER BY r.due_at) <= v_max_events AS claimed
      FROM ranked r
  ),
  due AS (
    -- The claimed events, and the moved heads that are not claimed. A moved head's event is
    -- its successor. Another head's is the first pending row from the head on, so that a
    -- head whose row went (deleted by hand) heals itself. NULL when this statement's snapshot
    -- sees none: a head locked here is its newest version, which another claim may have
    -- moved, after this snapshot, to a row a writer committed after it too. Such a head keeps
    -- its sequence and is due again a lease later, like a claimed one: a later claim's
    -- snapshot sees its row. Setting it to NULL would strand that row for good (the next
    -- batch of the key makes its own first row the head). A head with truly nothing from it
    -- on (its row skipped or deleted) is looked at once a lease, never on every claim. The
    -- attempt is the head's next one; a head that moved or healed to a later row starts from
    -- that row's count.
    SELECT p.destination, p.partition_key, p.claimed, p.due_at, p.head_attempts,
           CASE WHEN p.moved THEN p.id ELSE n.id END AS id,
           CASE WHEN p.moved THEN p.sequence ELSE coalesce(n.sequence, p.sequence) END AS sequence,
           CASE WHEN p.moved THEN p.attempts
                WHEN n.sequence = p.sequence THEN coalesce(p.head_attempts, 0)
                ELSE n.attempts END AS attempts
      FROM (SELECT * FROM picked WHERE moved OR claimed) p
      LEFT JOIN LATERAL (
        SELECT o.id, o.sequence, o.attempts
          FROM outbox o
         WHERE NOT p.moved
           AND o.destination = p.destination AND o.partition_key = p.partition_key
           AND o.status = 'pending' AND o.sequence >= p.sequence
         ORDER BY o.sequence
         LIMIT 1) n ON true
  ),
  written AS (
    -- Each head once: a claimed one leased (due again when the lease runs out, counting the
    -- attempt; its outbox row is not written, its mark records the attempt), a moved one
    -- that is not claimed on its successor with that event's due time and attempts.
    UPDATE tidemark_destination_sequence h
       SET head_sequence = due.sequence,
           head_due_at = CASE WHEN due.claimed THEN v_lease_end ELSE due.due_at END,
           head_attempts = CASE WHEN NOT due.claimed THEN due.attempts
                                WHEN due.id IS NULL THEN due.head_attempts
                                ELSE due.attempts + 1 END
      FROM due
     WHERE h.destination = due.destination AND h.partition_key = due.partition_key
  )
  SELECT o.id, o.destination, o.idempotency_key, o.partition_key, o.sequence, o.payload::text, due.attempts + 1
    FROM due
    JOIN outbox o ON o.id = due.id
   WHERE due.claimed;
  GET DIAGNOSTICS claimed = ROW_COUNT;

  IF claimed < v_max_events THEN
    -- Rows without an order to keep (outbox_unordered_due) have no head: their lease is on
    -- the row, by due time. Within each destination's limit, not less what its heads took:
    -- such rows are left from before sequences existed (migration 0005), and a claim that
    -- takes up to twice a destination's limit of them only queues them longer (the relay's
    -- window, not the claim, bounds what is in flight).
    RETURN QUERY
    UPDATE outbox o
       SET attempts = o.attempts + 1,
           next_attempt_at = v_lease_end
      FROM (SELECT u.id
              FROM unnest(p_destinations, p_limits) AS d(name, max_events)
             CROSS JOIN LATERAL (
               SELECT u.id, u.next_attempt_at
                 FROM outbox u
                WHERE u.status = 'pending' AND (u.partition_key IS NULL OR u.sequence IS NULL)
                  AND u.next_attempt_at <= now() AND u.destination = d.name
                ORDER BY u.next_attempt_at
                LIMIT greatest(d.max_events, 0)
                  FOR UPDATE SKIP LOCKED) u
             ORDER BY u.next_attempt_at
             LIMIT v_max_events - claimed) due
     WHERE o.id = due.id
    RETURNING o.id, o.destination, o.idempotency_key, o.partition_key, o.sequence, o.payload::text, o.attempts;
  END IF;
  PERFORM set_config('tidemark.outbox_heads', '', true);
END
$$;
