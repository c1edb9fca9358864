-- A claim whose cost is O(claimed rows) whatever the backlog and the statistics.
-- Each (destination, partition key) counter row also keeps the key's *head*: the lowest
-- sequence still pending (head_sequence, NULL when the key has nothing pending) and when it
-- is due (head_due_at, that event's next_attempt_at). Per-key order (docs/rules.md rule 12)
-- means only a head may go, so the relay claims due heads through
-- destination_sequence_due and reaches each one's outbox row through outbox_partition: an
-- index probe per claimed row, never a scan of the pending rows.
--
-- Who keeps the head right: every statement that makes an outbox row pending or not, or
-- moves a pending row's next_attempt_at, under the counter row's lock:
--   entity/apply_batch.sql       new rows of a key with no head make the first one the head
--   tidemark_relay_claim         a delivered head moves to the next pending sequence; a
--                                claimed head moves its due time to the lease's end
--   tidemark_relay_mark_failed   a retry moves the due time; a dead head moves on (a dead
--                                event does not hold back its key)
--   tidemark_outbox_retry        a revived event is the head if it is lower than the head
-- and, for anything else (an operator's UPDATE by hand, a test forging rows), the trigger
-- outbox_keeps_heads_on_* recompute the head of each key a row of the statement touched. The
-- statements above set tidemark.outbox_heads to 'kept' for their transaction, so the
-- trigger costs the batch path one comparison per row.
--
-- Lock order: counter rows in (destination, partition_key) order, before any outbox row of
-- their keys. Writers lock them in that order (apply_batch.sql), the marks and retries
-- lock them first and then read the outbox with a new snapshot (so a writer that committed
-- meanwhile is seen), and the claim takes them with SKIP LOCKED: it never waits.
-- The functions are plpgsql because that order needs two steps: lock, then read with a
-- snapshot taken after the lock. Change them with CREATE OR REPLACE in a later migration.
--
-- Plans: each step of the claim, the marks and the retries is an index probe per event, and
-- the due heads are read in index order (destination_sequence_due) until enough are locked.
-- Without statistics the planner guesses a handful of due heads and would rather read them all
-- by a bitmap scan and sort them (the cost then grows with the keys that have something
-- due), or join the events to the counters by reading every counter row in key order (a merge
-- join). So those functions run with sequential and bitmap scans, hash and merge joins off:
-- what is left is nested loops of index probes, and an ordered index scan that needs no sort
-- is then the cheapest plan for the due heads whatever the estimates.

ALTER TABLE tidemark_destination_sequence
  ADD COLUMN head_sequence bigint,
  ADD COLUMN head_due_at timestamptz;

-- A key with outbox rows but no counter (none is expected: 0005 made one for every key)
-- gets one, so that every ordered row has a head to be claimed through.
INSERT INTO tidemark_destination_sequence (destination, partition_key, last_sequence)
SELECT destination, partition_key, max(sequence)
  FROM outbox
 WHERE partition_key IS NOT NULL AND sequence IS NOT NULL
 GROUP BY destination, partition_key
ON CONFLICT (destination, partition_key) DO NOTHING;

UPDATE tidemark_destination_sequence h
   SET head_sequence = p.sequence, head_due_at = p.next_attempt_at
  FROM (SELECT DISTINCT ON (destination, partition_key) destination, partition_key, sequence, next_attempt_at
          FROM outbox
         WHERE status = 'pending' AND partition_key IS NOT NULL AND sequence IS NOT NULL
         ORDER BY destination, partition_key, sequence) p
 WHERE h.destination = p.destination AND h.partition_key = p.partition_key;

-- The claim's entry: a destination's due heads in due order.
CREATE INDEX destination_sequence_due ON tidemark_destination_sequence (destination, head_due_at)
  WHERE head_sequence IS NOT NULL;

-- Rows without a partition key or a sequence (written before sequences existed, or by hand)
-- have no order to keep and no head: they are claimed by their own due time. Normally empty.
CREATE INDEX outbox_unordered_due ON outbox (next_attempt_at)
  WHERE status = 'pending' AND (partition_key IS NULL OR sequence IS NULL);

-- The relay no longer scans pending rows by due time: the heads replace it. outbox_partition
-- stays (the claim's probe and the head's advance); so do outbox_destination_partition and
-- outbox_undelivered (views and status).
DROP INDEX outbox_due;

-- The head of one key, recomputed from the outbox: the lowest pending sequence, with its due
-- time. The caller holds the counter row's lock, and this runs as a statement of its own, so
-- its snapshot is taken after the lock.
CREATE FUNCTION tidemark_outbox_reset_head(p_destination text, p_partition_key text) RETURNS void
LANGUAGE sql AS $$
  UPDATE tidemark_destination_sequence h
     SET (head_sequence, head_due_at) =
         (SELECT o.sequence, o.next_attempt_at
            FROM outbox o
           WHERE o.destination = p_destination AND o.partition_key = p_partition_key
             AND o.status = 'pending' AND o.sequence IS NOT NULL
           ORDER BY o.sequence
           LIMIT 1)
   WHERE h.destination = p_destination AND h.partition_key = p_partition_key
$$;

-- Locks the counter rows of the outbox events p_ids, in lock order. plpgsql so that PERFORM
-- runs the query to its end (a SQL function would stop at the first row).
CREATE FUNCTION tidemark_outbox_lock_heads(p_ids bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1
     FROM tidemark_destination_sequence h
    WHERE (h.destination, h.partition_key) IN
          (SELECT o.destination, o.partition_key FROM outbox o WHERE o.id = ANY (p_ids))
    ORDER BY h.destination, h.partition_key
      FOR UPDATE OF h;
END
$$;

-- Records the deliveries p_delivered and claims up to p_max_events due events of
-- p_destinations with a lease of p_lease_ms (relay/claim.sql says what each step means).
CREATE FUNCTION tidemark_relay_claim(p_destinations text[], p_max_events bigint, p_lease_ms bigint,
                                     p_delivered bigint[])
RETURNS TABLE (id bigint, destination text, idempotency_key text, partition_key text, sequence bigint,
               payload text, attempts int)
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
#variable_conflict use_column
DECLARE
  claimed bigint := 0;
BEGIN
  PERFORM set_config('tidemark.outbox_heads', 'kept', true);
  IF cardinality(p_delivered) > 0 THEN
    PERFORM tidemark_outbox_lock_heads(p_delivered);
    -- A delivered head moves on to the next pending sequence of its key. The statement's
    -- snapshot is from before its own UPDATE, so the rows delivered now are left out by id.
    -- A delivered event that is not its key's head (a lower one was re-driven meanwhile)
    -- leaves the head where it is.
    WITH delivered AS (
      UPDATE outbox o
         SET status = 'delivered', delivered_at = now(), last_error = NULL
       WHERE o.id = ANY (p_delivered) AND o.status = 'pending'
      RETURNING o.destination, o.partition_key, o.sequence
    )
    UPDATE tidemark_destination_sequence h
       SET (head_sequence, head_due_at) =
           (SELECT n.sequence, n.next_attempt_at
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
    -- Up to p_max_events due heads per destination, locked; those that another relay (or a
    -- writer committing new rows of the key) holds are skipped, never waited for.
    SELECT h.destination, h.partition_key, h.head_sequence
      FROM unnest(p_destinations) AS d(name)
     CROSS JOIN LATERAL (
       SELECT h.destination, h.partition_key, h.head_sequence, h.head_due_at
         FROM tidemark_destination_sequence h
        WHERE h.destination = d.name AND h.head_sequence IS NOT NULL AND h.head_due_at <= now()
        ORDER BY h.head_due_at
        LIMIT p_max_events
          FOR UPDATE SKIP LOCKED) h
     ORDER BY h.head_due_at
     LIMIT p_max_events
  ),
  due AS (
    -- The head's outbox row; the first pending one from the head on, so that a head whose
    -- row went (deleted by hand) heals itself. NULL when this statement's snapshot sees none:
    -- a head locked here is its newest version, which another claim may have moved, after
    -- this snapshot, to a row a writer committed after it too. Such a head keeps its
    -- sequence and is due again a lease later, like a claimed row (below): a later claim's
    -- snapshot sees its row. Setting it to NULL would strand that row for good (the next
    -- batch of the key makes its own first row the head). A head with truly nothing from it
    -- on (its row skipped or deleted) is looked at once a lease, never on every claim.
    SELECT hd.destination, hd.partition_key, n.id, n.sequence
      FROM heads hd
      LEFT JOIN LATERAL (
        SELECT o.id, o.sequence
          FROM outbox o
         WHERE o.destination = hd.destination AND o.partition_key = hd.partition_key
           AND o.status = 'pending' AND o.sequence >= hd.head_sequence
         ORDER BY o.sequence
         LIMIT 1) n ON true
  ),
  moved AS (
    -- Leased heads are due again when the lease runs out, like their rows.
    UPDATE tidemark_destination_sequence h
       SET head_sequence = COALESCE(due.sequence, h.head_sequence),
           head_due_at = now() + p_lease_ms * interval '1 millisecond'
      FROM due
     WHERE h.destination = due.destination AND h.partition_key = due.partition_key
  )
  UPDATE outbox o
     SET attempts = o.attempts + 1,
         next_attempt_at = now() + p_lease_ms * interval '1 millisecond'
    FROM due
   WHERE o.id = due.id
  RETURNING o.id, o.destination, o.idempotency_key, o.partition_key, o.sequence, o.payload::text, o.attempts;
  GET DIAGNOSTICS claimed = ROW_COUNT;

  IF claimed < p_max_events THEN
    -- Rows without an order to keep (outbox_unordered_due), by due time.
    RETURN QUERY
    UPDATE outbox o
       SET attempts = o.attempts + 1,
           next_attempt_at = now() + p_lease_ms * interval '1 millisecond'
      FROM (SELECT u.id
              FROM outbox u
             WHERE u.status = 'pending' AND (u.partition_key IS NULL OR u.sequence IS NULL)
               AND u.next_attempt_at <= now() AND u.destination = ANY (p_destinations)
             ORDER BY u.next_attempt_at
             LIMIT p_max_events - claimed
               FOR UPDATE SKIP LOCKED) due
     WHERE o.id = due.id
    RETURNING o.id, o.destination, o.idempotency_key, o.partition_key, o.sequence, o.payload::text, o.attempts;
  END IF;
  PERFORM set_config('tidemark.outbox_heads', '', true);
END
$$;

-- Records a failed attempt of event p_id (relay/mark_failed.sql); returns the rows changed.
CREATE FUNCTION tidemark_relay_mark_failed(p_id bigint, p_attempt int, p_status text, p_delay_ms bigint,
                                           p_error text) RETURNS bigint
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
DECLARE
  v_destination text;
  v_partition_key text;
  v_sequence bigint;
  v_due timestamptz;
BEGIN
  PERFORM set_config('tidemark.outbox_heads', 'kept', true);
  PERFORM tidemark_outbox_lock_heads(ARRAY[p_id]);
  UPDATE outbox o
     SET status = p_status,
         next_attempt_at = now() + p_delay_ms * interval '1 millisecond',
         last_error = p_error
   WHERE o.id = p_id AND o.attempts = p_attempt AND o.status = 'pending'
  RETURNING o.destination, o.partition_key, o.sequence, o.next_attempt_at
       INTO v_destination, v_partition_key, v_sequence, v_due;
  IF NOT FOUND THEN
    PERFORM set_config('tidemark.outbox_heads', '', true);
    RETURN 0;
  END IF;
  IF p_status = 'pending' THEN
    UPDATE tidemark_destination_sequence h
       SET head_due_at = v_due
     WHERE h.destination = v_destination AND h.partition_key = v_partition_key AND h.head_sequence = v_sequence;
  ELSIF EXISTS (SELECT 1 FROM tidemark_destination_sequence h
                 WHERE h.destination = v_destination AND h.partition_key = v_partition_key
                   AND h.head_sequence = v_sequence) THEN
    -- A dead head does not hold back its key: the next pending sequence goes.
    PERFORM tidemark_outbox_reset_head(v_destination, v_partition_key);
  END IF;
  PERFORM set_config('tidemark.outbox_heads', '', true);
  RETURN 1;
END
$$;

-- Makes the events p_ids that are in one of p_statuses pending with a fresh attempt budget,
-- due now (relay/retry_one.sql, relay/retry_all_dead.sql); returns their ids. A revived
-- event below its key's head becomes the head.
CREATE FUNCTION tidemark_outbox_retry(p_ids bigint[], p_statuses text[]) RETURNS SETOF bigint
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
BEGIN
  PERFORM set_config('tidemark.outbox_heads', 'kept', true);
  PERFORM tidemark_outbox_lock_heads(p_ids);
  RETURN QUERY
  WITH revived AS (
    UPDATE outbox o
       SET status = 'pending', attempts = 0, next_attempt_at = now(), last_error = NULL
     WHERE o.id = ANY (p_ids) AND o.status = ANY (p_statuses)
    RETURNING o.id, o.destination, o.partition_key, o.sequence
  ),
  lowest AS (
    SELECT r.destination, r.partition_key, min(r.sequence) AS sequence
      FROM revived r
     WHERE r.partition_key IS NOT NULL AND r.sequence IS NOT NULL
     GROUP BY r.destination, r.partition_key
  ),
  headed AS (
    UPDATE tidemark_destination_sequence h
       SET head_sequence = least(h.head_sequence, l.sequence),
           head_due_at = CASE WHEN h.head_sequence IS NULL OR l.sequence <= h.head_sequence THEN now()
                              ELSE h.head_due_at END
      FROM lowest l
     WHERE h.destination = l.destination AND h.partition_key = l.partition_key
  )
  SELECT r.id FROM revived r;
  PERFORM set_config('tidemark.outbox_heads', '', true);
END
$$;

-- Keeps the heads of rows written by anything else (see above): the key of the changed row
-- (both keys, in lock order, if an UPDATE moved it) has its counter row locked, made if
-- missing, and its head recomputed.
CREATE FUNCTION tidemark_outbox_keep_head(p_destination text, p_partition_key text, p_sequence bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF p_partition_key IS NULL OR p_sequence IS NULL THEN
    RETURN;  -- no order to keep (outbox_unordered_due)
  END IF;
  INSERT INTO tidemark_destination_sequence AS seq (destination, partition_key, last_sequence)
  VALUES (p_destination, p_partition_key, p_sequence)
  ON CONFLICT (destination, partition_key) DO UPDATE
     SET last_sequence = greatest(seq.last_sequence, EXCLUDED.last_sequence);
  PERFORM tidemark_outbox_reset_head(p_destination, p_partition_key);
END
$$;

CREATE FUNCTION tidemark_outbox_keep_heads() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM tidemark_outbox_keep_head(OLD.destination, OLD.partition_key, OLD.sequence);
  ELSIF TG_OP = 'INSERT' OR (OLD.destination, OLD.partition_key) IS NOT DISTINCT FROM (NEW.destination, NEW.partition_key) THEN
    PERFORM tidemark_outbox_keep_head(NEW.destination, NEW.partition_key, NEW.sequence);
  ELSIF (OLD.destination, OLD.partition_key) < (NEW.destination, NEW.partition_key) THEN
    PERFORM tidemark_outbox_keep_head(OLD.destination, OLD.partition_key, OLD.sequence);
    PERFORM tidemark_outbox_keep_head(NEW.destination, NEW.partition_key, NEW.sequence);
  ELSE
    PERFORM tidemark_outbox_keep_head(NEW.destination, NEW.partition_key, NEW.sequence);
    PERFORM tidemark_outbox_keep_head(OLD.destination, OLD.partition_key, OLD.sequence);
  END IF;
  RETURN NULL;
END
$$;

-- Only changes that can move a head fire it: a delivered row deleted by retention does not.
CREATE TRIGGER outbox_keeps_heads_on_insert
  AFTER INSERT ON outbox
  FOR EACH ROW
  WHEN (current_setting('tidemark.outbox_heads', true) IS DISTINCT FROM 'kept' AND NEW.status = 'pending')
  EXECUTE FUNCTION tidemark_outbox_keep_heads();

CREATE TRIGGER outbox_keeps_heads_on_update
  AFTER UPDATE ON outbox
  FOR EACH ROW
  WHEN (current_setting('tidemark.outbox_heads', true) IS DISTINCT FROM 'kept'
        AND (OLD.status = 'pending' OR NEW.status = 'pending')
        AND (OLD.status, OLD.next_attempt_at, OLD.destination, OLD.partition_key, OLD.sequence)
            IS DISTINCT FROM (NEW.status, NEW.next_attempt_at, NEW.destination, NEW.partition_key, NEW.sequence))
  EXECUTE FUNCTION tidemark_outbox_keep_heads();

CREATE TRIGGER outbox_keeps_heads_on_delete
  AFTER DELETE ON outbox
  FOR EACH ROW
  WHEN (current_setting('tidemark.outbox_heads', true) IS DISTINCT FROM 'kept' AND OLD.status = 'pending')
  EXECUTE FUNCTION tidemark_outbox_keep_heads();
