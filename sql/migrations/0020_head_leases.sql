-- The relay's lease is kept on the key's head only. Before, a claim wrote
-- both the head and the outbox row (attempts, next_attempt_at), and the delivered mark wrote
-- them again: two non-HOT updates of the wide outbox row per event, each a full new version
-- in every index of the outbox and in the WAL. Now a claim writes the head alone and the
-- outbox row is written once, by the mark that records the attempt's outcome.
--
-- head_attempts is the attempt count of the head's event: the attempts its row records, plus
-- one while an attempt is leased (head_due_at is then the lease's end). NULL counts as 0: a
-- head that a writer made (entity/apply_batch.sql) is a new row that has made no attempt, and
-- a key without a head has NULL. It is the fencing token of the marks for ordered rows; rows
-- without a key or a sequence (outbox_unordered_due) keep their lease and their token on the
-- row.
--
-- Rows in flight therefore show, in `tidemark outbox list` and GET /v1/outbox, the attempts
-- recorded so far and the due time before the lease; the mark of the attempt records both.
ALTER TABLE tidemark_destination_sequence ADD COLUMN head_attempts int;

UPDATE tidemark_destination_sequence h
   SET head_attempts = o.attempts
  FROM outbox o
 WHERE h.head_sequence IS NOT NULL
   AND o.destination = h.destination AND o.partition_key = h.partition_key AND o.sequence = h.head_sequence
   AND o.status = 'pending';

-- The head of one key, recomputed from the outbox (the caller holds the counter row's lock):
-- the lowest pending sequence, its due time and attempts. A head that stays on a leased event
-- keeps its lease (an operator's change to the row cannot send it twice at once).
CREATE OR REPLACE FUNCTION tidemark_outbox_reset_head(p_destination text, p_partition_key text) RETURNS void
LANGUAGE sql AS $$
  UPDATE tidemark_destination_sequence h
     SET (head_sequence, head_due_at, head_attempts) =
         (SELECT o.sequence,
                 CASE WHEN o.sequence = h.head_sequence AND h.head_attempts > o.attempts
                      THEN greatest(h.head_due_at, o.next_attempt_at) ELSE o.next_attempt_at END,
                 CASE WHEN o.sequence = h.head_sequence AND h.head_attempts > o.attempts
                      THEN h.head_attempts ELSE o.attempts END
            FROM outbox o
           WHERE o.destination = p_destination AND o.partition_key = p_partition_key
             AND o.status = 'pending' AND o.sequence IS NOT NULL
           ORDER BY o.sequence
           LIMIT 1)
   WHERE h.destination = p_destination AND h.partition_key = p_partition_key
$$;

-- The claim now also takes the attempts of the delivered events (p_delivered_attempts, in the
-- order of p_delivered): the row records the attempt that reached the destination.
DROP FUNCTION tidemark_relay_claim(text[], bigint, bigint, bigint[]);

CREATE FUNCTION tidemark_relay_claim(p_destinations text[], p_max_events bigint, p_lease_ms bigint,
                                     p_delivered bigint[], p_delivered_attempts int[])
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
    -- Up to p_max_events due heads per destination, locked; those that another relay (or a
    -- writer committing new rows of the key) holds are skipped, never waited for.
    SELECT h.destination, h.partition_key, h.head_sequence, h.head_attempts
      FROM unnest(p_destinations) AS d(name)
     CROSS JOIN LATERAL (
       SELECT h.destination, h.partition_key, h.head_sequence, h.head_attempts, h.head_due_at
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
    -- the row, by due time.
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

-- Records a failed attempt p_attempt of event p_id (relay/mark_failed.sql); returns the rows
-- changed. Fenced by the attempt: on the key's head while the event is the head (a newer
-- claim counted a later attempt there), else on the row (an event that is not its key's head
-- is leased by nobody: a lower event was re-driven meanwhile). The row records the attempt.
CREATE OR REPLACE FUNCTION tidemark_relay_mark_failed(p_id bigint, p_attempt int, p_status text, p_delay_ms bigint,
                                                      p_error text) RETURNS bigint
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
DECLARE
  v_destination text;
  v_partition_key text;
  v_sequence bigint;
  v_attempts int;
  v_head_attempts int;
  v_is_head boolean;
  v_due timestamptz := now() + p_delay_ms * interval '1 millisecond';
BEGIN
  PERFORM set_config('tidemark.outbox_heads', 'kept', true);
  PERFORM tidemark_outbox_lock_heads(ARRAY[p_id]);
  SELECT o.destination, o.partition_key, o.sequence, o.attempts
    INTO v_destination, v_partition_key, v_sequence, v_attempts
    FROM outbox o
   WHERE o.id = p_id AND o.status = 'pending';
  IF NOT FOUND THEN
    PERFORM set_config('tidemark.outbox_heads', '', true);
    RETURN 0;
  END IF;
  SELECT h.head_attempts INTO v_head_attempts
    FROM tidemark_destination_sequence h
   WHERE v_partition_key IS NOT NULL AND v_sequence IS NOT NULL
     AND h.destination = v_destination AND h.partition_key = v_partition_key AND h.head_sequence = v_sequence;
  v_is_head := FOUND;
  IF (v_is_head AND v_head_attempts IS DISTINCT FROM p_attempt)
     OR (NOT v_is_head AND v_partition_key IS NOT NULL AND v_sequence IS NOT NULL AND v_attempts >= p_attempt)
     OR ((v_partition_key IS NULL OR v_sequence IS NULL) AND v_attempts <> p_attempt) THEN
    PERFORM set_config('tidemark.outbox_heads', '', true);
    RETURN 0;
  END IF;
  UPDATE outbox o
     SET status = p_status, attempts = p_attempt, next_attempt_at = v_due, last_error = p_error
   WHERE o.id = p_id;
  IF v_is_head AND p_status = 'pending' THEN
    UPDATE tidemark_destination_sequence h
       SET head_due_at = v_due
     WHERE h.destination = v_destination AND h.partition_key = v_partition_key;
  ELSIF v_is_head THEN
    -- A dead head does not hold back its key: the next pending sequence goes.
    PERFORM tidemark_outbox_reset_head(v_destination, v_partition_key);
  END IF;
  PERFORM set_config('tidemark.outbox_heads', '', true);
  RETURN 1;
END
$$;

-- A revived event below or at its key's head becomes the head, due now, with its fresh
-- attempt budget (0015's function, which now sets head_attempts too).
CREATE OR REPLACE FUNCTION tidemark_outbox_retry(p_ids bigint[], p_statuses text[]) RETURNS SETOF bigint
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
                              ELSE h.head_due_at END,
           head_attempts = CASE WHEN h.head_sequence IS NULL OR l.sequence <= h.head_sequence THEN 0
                                ELSE h.head_attempts END
      FROM lowest l
     WHERE h.destination = l.destination AND h.partition_key = l.partition_key
  )
  SELECT r.id FROM revived r;
  PERFORM set_config('tidemark.outbox_heads', '', true);
END
$$;
