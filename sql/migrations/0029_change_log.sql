-- One change log, fanned out at read (docs/architecture.md "The change log", docs/delivery.md
-- "The change log and the cursors"). Until now a batch wrote one outbox row per accepted change
-- *per destination*, each with its idempotency key, its sequence counter row and its indexes, so
-- every destination a pipeline fed cost the load path as much again (five loaded at a quarter
-- of the rate of one). Now a batch writes each accepted change once, to tidemark_change, and
-- each destination reads the log through its own cursor per partition key. What exists per
-- destination is only what must: the cursor (how far it is, its own sequence, its head's
-- attempts, backoff and lease), the events it gave up on (dead letters) and the attempts of
-- delivered events that took more than one. Idempotency keys, event ids, sequences and
-- payloads are derived when read, byte for byte as they were stored before, and `outbox`
-- stays a relation with its documented columns: a view over the log and the cursors.

-- Plans: the relay's functions below run with sequential and bitmap scans, hash and merge
-- joins off, so that whatever the statistics (a backlog written
-- since the last ANALYZE, cursors that did not exist then) each step is a nested loop of index
-- probes whose cost follows the events it handles, never the size of the log or the cursors.

-- One counter per partition key: the batch takes its changes' numbers under the counter's row
-- lock (entity/apply_batch.sql), so the changes of one key commit in key_sequence order, and a
-- change of the key with a higher position always has a higher key_sequence. The ingest
-- (below) relies on it: a key's changes become visible in order.
CREATE TABLE tidemark_partition_sequence (
  partition_key text PRIMARY KEY,
  last_sequence bigint NOT NULL
);

-- The log. payload is the event without its event_id and sequence, which depend on the
-- destination. event_key is the idempotency key without '<destination>:'. A row migrated from
-- the outbox (it has no entity) keeps what its destination was sent as it was: its key
-- (idempotency_key), its sequence (NULL for a row that had none) and its whole payload.
CREATE TABLE tidemark_change (
  position        bigserial PRIMARY KEY,
  xid             xid8 NOT NULL DEFAULT pg_current_xact_id(),
  partition_key   text NOT NULL,
  key_sequence    bigint NOT NULL,
  entity          text,
  event_key       text NOT NULL,
  idempotency_key text,
  sequence        bigint,
  destinations    text[] NOT NULL,
  payload         jsonb NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now()
);
-- A replay cannot log a change twice (docs/rules.md rule 6).
CREATE UNIQUE INDEX tidemark_change_event ON tidemark_change (entity, event_key);
-- A key's stream, in order: the cursors' next change, the heads' events.
CREATE UNIQUE INDEX tidemark_change_key ON tidemark_change (partition_key, key_sequence);
-- The ingest: the changes of transactions a destination has not seen yet.
CREATE INDEX tidemark_change_xid ON tidemark_change (xid);
-- No index by age: retention walks the log by position (retention/outbox_chunk.sql), and an
-- index the write path keeps for it would cost every change.

-- The destinations the log feeds. number makes the outbox ids (position * 1024 + number), so
-- an event's id is stable and unique without a row of its own. ingested is the snapshot the
-- destination last read the log in: the changes of transactions it does not show as
-- committed are the ones not read yet (rule 11: never a position high-water mark, since a
-- position taken early may commit late).
CREATE TABLE tidemark_destination (
  name          text PRIMARY KEY,
  number        int NOT NULL UNIQUE CHECK (number BETWEEN 1 AND 1023),
  ingested      pg_snapshot NOT NULL,
  registered_at timestamptz NOT NULL DEFAULT now()
);

-- A destination's place in one key's stream. through: the key_sequence it has delivered or
-- given up on through; last_sequence: its own sequence of that event (rule 12: counted per
-- destination, so a destination fed by only some of a key's pipelines has no gap); the head:
-- the key_sequence of its next change (NULL when none is known), when it is due, its attempts
-- (counting one in flight), whether a relay holds it, and its last error.
CREATE TABLE tidemark_cursor (
  destination   text NOT NULL,
  partition_key text NOT NULL,
  through       bigint NOT NULL DEFAULT 0,
  last_sequence bigint NOT NULL DEFAULT 0,
  head_sequence bigint,
  head_due_at   timestamptz,
  head_attempts int NOT NULL DEFAULT 0,
  head_leased   boolean NOT NULL DEFAULT false,
  last_error    text,
  advanced_at   timestamptz,
  PRIMARY KEY (destination, partition_key)
);
-- The claim's entry: a destination's due heads in due order.
CREATE INDEX tidemark_cursor_due ON tidemark_cursor (destination, head_due_at) WHERE head_sequence IS NOT NULL;

-- Events a destination gave up on ('dead'), and dead ones revived by `outbox retry`
-- ('pending'): a revived letter is delivered by its own due time, behind its key's cursor,
-- and holds nothing back. It keeps the sequence it was given.
CREATE TABLE tidemark_dead_letter (
  destination     text NOT NULL,
  position        bigint NOT NULL REFERENCES tidemark_change ON DELETE CASCADE,
  sequence        bigint,
  status          text NOT NULL CHECK (status IN ('dead', 'pending')),
  attempts        int NOT NULL,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_error      text,
  leased          boolean NOT NULL DEFAULT false,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (destination, position)
);
CREATE INDEX tidemark_dead_letter_due ON tidemark_dead_letter (destination, next_attempt_at) WHERE status = 'pending';
CREATE INDEX tidemark_dead_letter_position ON tidemark_dead_letter (position);

-- The attempts of a delivered event that took more than one (a delivered event without a row
-- here took one).
CREATE TABLE tidemark_delivery_attempts (
  destination text NOT NULL,
  position    bigint NOT NULL REFERENCES tidemark_change ON DELETE CASCADE,
  attempts    int NOT NULL,
  PRIMARY KEY (destination, position)
);
CREATE INDEX tidemark_delivery_attempts_position ON tidemark_delivery_attempts (position);

-- The outbox rows become the log, with nothing lost or sent twice. Each row is a change of its
-- key for its one destination, in its destination's order, and keeps its idempotency key,
-- sequence and payload as they were. Each destination's cursor on a key stands after its
-- highest delivered or dead row: dead rows are dead letters; a pending row below it
-- (re-driven after a later one was delivered) is a revived letter; the pending rows above it
-- are the stream ahead, the first its head, with the attempts, due time (a lease in flight
-- kept) and error it had. The cursor's own sequence starts at the highest the destination
-- ever issued for the key (its old counter, or a row's if higher): retention deleted delivered
-- rows but kept dead and pending ones, so the rows left can lie below it, and a new change
-- must never take a number the destination already received. A row without a partition key
-- or a sequence (from before sequences existed) is a stream of its own, keyed by its
-- idempotency key. The old counters of keys without rows left keep the destination's
-- sequence going.
INSERT INTO tidemark_destination (name, number, ingested)
SELECT d.name, row_number() OVER (ORDER BY d.name), pg_current_snapshot()
  FROM (SELECT o.destination AS name FROM outbox o
        UNION
        SELECT q.destination FROM tidemark_destination_sequence q) d;

CREATE TEMPORARY TABLE tidemark_migrated ON COMMIT DROP AS
SELECT m.*, row_number() OVER (ORDER BY m.partition_key, m.key_sequence) AS position
  FROM (SELECT o.id, o.destination, o.idempotency_key, o.sequence, o.payload, o.status, o.attempts,
               o.next_attempt_at, o.last_error, o.created_at, o.delivered_at, p.partition_key,
               row_number() OVER (PARTITION BY p.partition_key ORDER BY o.sequence, o.destination, o.id) AS key_sequence
          FROM outbox o
         CROSS JOIN LATERAL (SELECT CASE WHEN o.partition_key IS NULL OR o.sequence IS NULL THEN o.idempotency_key
                                         ELSE o.partition_key END AS partition_key) p) m;

INSERT INTO tidemark_change (position, partition_key, key_sequence, entity, event_key, idempotency_key, sequence,
                             destinations, payload, created_at)
SELECT m.position, m.partition_key, m.key_sequence, NULL, m.idempotency_key, m.idempotency_key, m.sequence,
       ARRAY[m.destination], m.payload, m.created_at
  FROM tidemark_migrated m
 ORDER BY m.position;
SELECT setval(pg_get_serial_sequence('tidemark_change', 'position'), coalesce(max(c.position), 0) + 1, false)
  FROM tidemark_change c;

INSERT INTO tidemark_partition_sequence (partition_key, last_sequence)
SELECT m.partition_key, max(m.key_sequence) FROM tidemark_migrated m GROUP BY m.partition_key;

WITH streams AS (
  SELECT m.destination, m.partition_key,
         coalesce(max(m.key_sequence) FILTER (WHERE m.status <> 'pending'), 0) AS through,
         max(m.sequence) AS highest, max(m.delivered_at) AS advanced_at
    FROM tidemark_migrated m
   GROUP BY m.destination, m.partition_key
)
INSERT INTO tidemark_cursor (destination, partition_key, through, last_sequence, head_sequence, head_due_at,
                             head_attempts, last_error, advanced_at)
SELECT s.destination, s.partition_key, s.through,
       greatest(s.highest, q.last_sequence, 0),
       h.key_sequence, CASE WHEN q.head_sequence = h.sequence THEN greatest(h.next_attempt_at, q.head_due_at)
                            ELSE h.next_attempt_at END,
       coalesce(CASE WHEN q.head_sequence = h.sequence THEN greatest(q.head_attempts, h.attempts) END, h.attempts, 0),
       h.last_error, s.advanced_at
  FROM streams s
  LEFT JOIN tidemark_destination_sequence q ON q.destination = s.destination AND q.partition_key = s.partition_key
  LEFT JOIN LATERAL (
    SELECT m.key_sequence, m.sequence, m.next_attempt_at, m.attempts, m.last_error
      FROM tidemark_migrated m
     WHERE m.destination = s.destination AND m.partition_key = s.partition_key AND m.key_sequence > s.through
     ORDER BY m.key_sequence
     LIMIT 1) h ON true;

INSERT INTO tidemark_cursor (destination, partition_key, last_sequence)
SELECT q.destination, q.partition_key, q.last_sequence
  FROM tidemark_destination_sequence q
ON CONFLICT (destination, partition_key) DO NOTHING;

INSERT INTO tidemark_dead_letter (destination, position, sequence, status, attempts, next_attempt_at, last_error, created_at)
SELECT m.destination, m.position, m.sequence, m.status, m.attempts, m.next_attempt_at, m.last_error,
       m.created_at
  FROM tidemark_migrated m
  JOIN tidemark_cursor k ON k.destination = m.destination AND k.partition_key = m.partition_key
 WHERE m.status = 'dead' OR (m.status = 'pending' AND m.key_sequence < k.through);

INSERT INTO tidemark_delivery_attempts (destination, position, attempts)
SELECT m.destination, m.position, m.attempts FROM tidemark_migrated m WHERE m.status = 'delivered' AND m.attempts > 1;

-- What the write-time fan-out needed goes: the table (with its triggers and indexes), the
-- counters per destination and key, and the functions that kept their heads.
DROP TABLE outbox;
DROP TABLE tidemark_destination_sequence;
DROP FUNCTION tidemark_outbox_keep_heads();
DROP FUNCTION tidemark_outbox_keep_head(text, text, bigint);
DROP FUNCTION tidemark_outbox_reset_head(text, text);
DROP FUNCTION tidemark_outbox_lock_heads(bigint[]);
DROP FUNCTION tidemark_relay_claim(text[], bigint[], bigint, bigint, bigint[], integer[]);
DROP FUNCTION tidemark_relay_mark_failed(bigint, integer, text, bigint, text);
DROP FUNCTION tidemark_relay_renew(bigint[], integer[], bigint);
DROP FUNCTION tidemark_outbox_retry(bigint[], text[]);

-- The event a destination receives: the change's payload with its event id and sequence
-- (a migrated change's, p_stored_key set, is whole already). jsonb orders keys itself, so the
-- text is the one the outbox stored. STABLE like jsonb_build_object, so that it is inlined
-- into the statements that call it.
CREATE FUNCTION tidemark_event_payload(p_payload jsonb, p_stored_key text, p_event_id text, p_sequence bigint)
RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN p_stored_key IS NULL THEN p_payload || jsonb_build_object('event_id', p_event_id, 'sequence', p_sequence)
              ELSE p_payload END
$$;

-- An event's sequence: a migrated change's own, else the one its cursor gives it.
CREATE FUNCTION tidemark_event_sequence(p_stored_key text, p_stored_sequence bigint, p_counted bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_stored_key IS NULL THEN p_counted ELSE p_stored_sequence END
$$;

-- An event's partition key: none for a migrated change that had no order (its stream is its
-- own, keyed by its idempotency key).
CREATE FUNCTION tidemark_event_partition(p_partition_key text, p_stored_key text, p_stored_sequence bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_stored_key IS NOT NULL AND p_stored_sequence IS NULL THEN NULL ELSE p_partition_key END
$$;

-- Registers the destinations p_names that are not known yet (entity/apply_batch.sql, for every
-- batch: known ones cost an index probe and no write). One registration at a time, so numbers
-- are taken once. A new destination has read nothing: its snapshot shows every transaction
-- from the oldest one running (this one included) as not committed, so the changes written
-- with it, from this transaction on, are all read.
CREATE FUNCTION tidemark_register_destinations(p_names text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_from xid8;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM unnest(p_names) AS n(name)
                  WHERE NOT EXISTS (SELECT 1 FROM tidemark_destination t WHERE t.name = n.name)) THEN
    RETURN;
  END IF;
  PERFORM pg_advisory_xact_lock(hashtext('tidemark_register_destinations'));
  v_from := least(pg_snapshot_xmin(pg_current_snapshot()), pg_current_xact_id());
  INSERT INTO tidemark_destination (name, number, ingested)
  SELECT n.name,
         (SELECT coalesce(max(t.number), 0) FROM tidemark_destination t) + row_number() OVER (ORDER BY n.name),
         format('%s:%s:', v_from, v_from)::pg_snapshot
    FROM (SELECT DISTINCT name FROM unnest(p_names) AS n(name)) n
   WHERE NOT EXISTS (SELECT 1 FROM tidemark_destination t WHERE t.name = n.name)
  ON CONFLICT (name) DO NOTHING;
END
$$;

-- Reads the changes of p_destination committed since it last read the log, and gives each of
-- their keys a head where the key had none (a key's first change beyond its cursor). One relay
-- reads a destination at a time (the others skip it for this call). A head is due from its
-- change's creation, as an outbox row was: older changes go first whenever they are read. The read never waits: a
-- cursor that a claim or a mark holds is skipped, and then the snapshot is not moved, so the
-- next read takes the same changes again (giving a head is idempotent). That matters: a claim
-- that holds a cursor may be moving its head with a snapshot from before these changes.
CREATE FUNCTION tidemark_log_ingest(p_destination text) RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan SET jit = off
AS $$
DECLARE
  v_number int;
  v_old pg_snapshot;
  v_now pg_snapshot;
  v_finished xid8[];
  v_fresh bigint;
  v_skipped bigint;
BEGIN
  SELECT t.number, t.ingested INTO v_number, v_old FROM tidemark_destination t WHERE t.name = p_destination;
  IF NOT FOUND OR NOT pg_try_advisory_xact_lock(hashtext('tidemark_log_ingest'), v_number) THEN
    RETURN;
  END IF;
  -- Taken before the read, whose own snapshot is newer: a change committed in between is
  -- seen by the read but left for the next one (it is not visible in v_now).
  v_now := pg_current_snapshot();
  -- What v_old had not seen is what began after it (from its xmax on) and what was running in
  -- it; of the latter, only what has ended since is read, each transaction by an index probe:
  -- so a transaction that stays open (a dry run, a rebuild) costs nothing here, whereas a read
  -- from v_old's xmin on would go over everything committed since it began, on every call.
  v_finished := ARRAY(SELECT x FROM pg_snapshot_xip(v_old) AS x WHERE pg_visible_in_snapshot(x, v_now));
  WITH fresh AS (
    SELECT c.partition_key, c.key_sequence, c.created_at
      FROM tidemark_change c
     WHERE c.xid >= pg_snapshot_xmax(v_old)
       AND pg_visible_in_snapshot(c.xid, v_now)
       AND p_destination = ANY (c.destinations)
    UNION ALL
    SELECT c.partition_key, c.key_sequence, c.created_at
      FROM tidemark_change c
     WHERE c.xid = ANY (v_finished)
       AND p_destination = ANY (c.destinations)
  ),
  keys AS (
    SELECT DISTINCT f.partition_key FROM fresh f
  ),
  known AS (
    SELECT k.partition_key
      FROM keys
      JOIN tidemark_cursor k ON k.destination = p_destination AND k.partition_key = keys.partition_key
  ),
  locked AS (
    SELECT k.partition_key, k.through, k.head_sequence
      FROM keys
      JOIN tidemark_cursor k ON k.destination = p_destination AND k.partition_key = keys.partition_key
       FOR UPDATE OF k SKIP LOCKED
  ),
  headed AS (
    UPDATE tidemark_cursor k
       SET head_sequence = h.key_sequence, head_due_at = h.created_at, head_attempts = 0, head_leased = false,
           last_error = NULL
      FROM (SELECT DISTINCT ON (l.partition_key) l.partition_key, f.key_sequence, f.created_at
              FROM locked l
              JOIN fresh f ON f.partition_key = l.partition_key AND f.key_sequence > l.through
             WHERE l.head_sequence IS NULL
             ORDER BY l.partition_key, f.key_sequence) h
     WHERE k.destination = p_destination AND k.partition_key = h.partition_key
  ),
  added AS (
    INSERT INTO tidemark_cursor (destination, partition_key, head_sequence, head_due_at)
    SELECT DISTINCT ON (f.partition_key) p_destination, f.partition_key, f.key_sequence, f.created_at
      FROM fresh f
     WHERE NOT EXISTS (SELECT 1 FROM known WHERE known.partition_key = f.partition_key)
     ORDER BY f.partition_key, f.key_sequence
  )
  SELECT (SELECT count(*) FROM fresh), (SELECT count(*) FROM known) - (SELECT count(*) FROM locked)
    INTO v_fresh, v_skipped;
  IF v_skipped = 0 AND (v_fresh > 0 OR pg_snapshot_xmax(v_now) > pg_snapshot_xmax(v_old)) THEN
    UPDATE tidemark_destination SET ingested = v_now WHERE name = p_destination;
  END IF;
END
$$;

-- The change of p_partition_key after key_sequence p_after that feeds p_destination (none:
-- no row), with its creation time, the due time of a head: where a cursor's head moves on.
-- One SELECT, inlined where it is called: an index range of the key's stream.
CREATE FUNCTION tidemark_next_change(p_destination text, p_partition_key text, p_after bigint)
RETURNS TABLE (key_sequence bigint, created_at timestamptz)
LANGUAGE sql STABLE AS $$
  SELECT c.key_sequence, c.created_at
    FROM tidemark_change c
   WHERE c.partition_key = p_partition_key AND c.key_sequence > p_after AND p_destination = ANY (c.destinations)
   ORDER BY c.key_sequence
   LIMIT 1
$$;

-- Locks the cursors of the events p_ids (outbox ids) that are their keys' heads, in key
-- order, waiting for them; the caller then reads with a snapshot taken after the lock. The
-- marks, renewals and retries lock first and never wait after; the ingest and the claim of
-- due heads never wait (SKIP LOCKED): so no two relays wait for each other in a cycle.
CREATE FUNCTION tidemark_lock_cursors(p_ids bigint[]) RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan SET jit = off
AS $$
BEGIN
  PERFORM 1
     FROM unnest(p_ids) AS e(id)
     JOIN tidemark_destination t ON t.number = (e.id % 1024)::int
     JOIN tidemark_change c ON c.position = e.id / 1024
     JOIN tidemark_cursor k ON k.destination = t.name AND k.partition_key = c.partition_key
    ORDER BY k.destination, k.partition_key
      FOR UPDATE OF k;
END
$$;

-- The events p_ids (outbox ids) as (destination, position, partition key, key_sequence, and a
-- migrated change's stored key and sequence), each with its attempt in p_attempts (same order;
-- NULL where the caller has none).
CREATE FUNCTION tidemark_outbox_events(p_ids bigint[], p_attempts int[])
RETURNS TABLE (id bigint, attempt int, destination text, "position" bigint, partition_key text, key_sequence bigint,
               stored_key text, stored_sequence bigint)
LANGUAGE sql STABLE AS $$
  SELECT e.id, e.attempt, t.name, c.position, c.partition_key, c.key_sequence, c.idempotency_key, c.sequence
    FROM unnest(p_ids, p_attempts) AS e(id, attempt)
    JOIN tidemark_destination t ON t.number = (e.id % 1024)::int
    JOIN tidemark_change c ON c.position = e.id / 1024
   WHERE t.name = ANY (c.destinations)
$$;

-- Records the deliveries p_delivered (with the attempts that reached the destination,
-- p_delivered_attempts) and claims up to p_max_events due events of p_destinations, at most
-- p_limits of each, leased for p_lease_ms (relay/claim.sql says what each step means).
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
  v_max_events bigint := greatest(p_max_events, 0);
  v_lease_end timestamptz := now() + p_lease_ms * interval '1 millisecond';
BEGIN
  IF cardinality(p_limits) IS DISTINCT FROM cardinality(p_destinations) THEN
    RAISE EXCEPTION 'tidemark_relay_claim: % limits for % destinations', cardinality(p_limits), cardinality(p_destinations);
  END IF;
  -- First the cursors this call moves (waiting for them), then the reads that never wait.
  IF cardinality(p_delivered) > 0 THEN
    PERFORM tidemark_lock_cursors(p_delivered);
  END IF;
  PERFORM tidemark_log_ingest(d.name) FROM unnest(p_destinations) AS d(name);

  RETURN QUERY
  WITH delivered AS (
    SELECT * FROM tidemark_outbox_events(p_delivered, p_delivered_attempts)
  ),
  letters AS (
    -- A revived letter that reached its destination is delivered: it is behind its cursor.
    DELETE FROM tidemark_dead_letter l
     USING delivered d
     WHERE l.destination = d.destination AND l.position = d.position AND l.status = 'pending'
    RETURNING l.destination, l.position, greatest(l.attempts, d.attempt) AS attempts
  ),
  moving AS (
    -- A delivered head moves on to its key's next change for the destination (NULL: none
    -- yet; the ingest gives it one when it comes). The cursor was locked above, so this
    -- statement's snapshot sees every change the ingest has seen. A delivered event that is
    -- no longer its key's head (a lease ran out and another relay delivered it) moves nothing.
    SELECT DISTINCT ON (k.destination, k.partition_key)
           k.destination, k.partition_key, d.position, greatest(k.head_attempts, d.attempt) AS delivered_attempts,
           k.head_sequence AS through,
           -- a migrated change has its own number, at most the cursor's (migration above)
           CASE WHEN d.stored_key IS NULL THEN k.last_sequence + 1
                ELSE greatest(k.last_sequence, d.stored_sequence) END AS last_sequence,
           n.key_sequence AS next,
           n.created_at AS next_due_at
      FROM delivered d
      JOIN tidemark_cursor k
        ON k.destination = d.destination AND k.partition_key = d.partition_key AND k.head_sequence = d.key_sequence
      LEFT JOIN LATERAL tidemark_next_change(k.destination, k.partition_key, k.head_sequence) n ON true
     ORDER BY k.destination, k.partition_key
  ),
  recorded AS (
    INSERT INTO tidemark_delivery_attempts (destination, position, attempts)
    SELECT m.destination, m.position, m.delivered_attempts FROM moving m WHERE m.delivered_attempts > 1
    UNION ALL
    SELECT l.destination, l.position, l.attempts FROM letters l WHERE l.attempts > 1
    ON CONFLICT ON CONSTRAINT tidemark_delivery_attempts_pkey DO UPDATE SET attempts = EXCLUDED.attempts
  ),
  waiting AS (
    -- Up to its limit of due heads per destination, locked; those another relay holds are
    -- skipped, never waited for.
    SELECT k.destination, k.partition_key, k.head_sequence, k.head_attempts, k.head_due_at, k.last_sequence
      FROM unnest(p_destinations, p_limits) AS d(name, max_events)
     CROSS JOIN LATERAL (
       SELECT k.destination, k.partition_key, k.head_sequence, k.head_attempts, k.head_due_at, k.last_sequence
         FROM tidemark_cursor k
        WHERE k.destination = d.name AND k.head_sequence IS NOT NULL AND k.head_due_at <= now()
        ORDER BY k.head_due_at
        LIMIT least(greatest(d.max_events, 0), v_max_events)
          FOR UPDATE SKIP LOCKED) k
  ),
  candidates AS (
    -- Every cursor this call may write, once: the moved ones (their next change is due from
    -- its creation),
    -- and the due heads of other keys (a moved cursor's old version, due when its lease ran
    -- out before the answer came, is not one).
    SELECT DISTINCT ON (c.destination, c.partition_key) c.*
      FROM (SELECT m.destination, m.partition_key, true AS moved, m.next_due_at AS due_at, m.next AS head,
                   0 AS head_attempts, m.through, m.last_sequence
              FROM moving m
            UNION ALL
            SELECT w.destination, w.partition_key, false, w.head_due_at, w.head_sequence,
                   w.head_attempts, NULL::bigint, w.last_sequence
              FROM waiting w) c
     ORDER BY c.destination, c.partition_key, c.moved DESC
  ),
  ranked AS (
    -- The due ones by due time, up to each destination's limit (a moved cursor of a
    -- destination this relay does not serve is only moved) ...
    SELECT c.*,
           coalesce(c.head IS NOT NULL
                    AND array_position(p_destinations, c.destination) IS NOT NULL
                    AND row_number() OVER (PARTITION BY c.destination, c.head IS NOT NULL ORDER BY c.due_at)
                        <= p_limits[array_position(p_destinations, c.destination)], false) AS within
      FROM candidates c
  ),
  picked AS (
    -- ... and p_max_events in all.
    SELECT r.*,
           r.within AND row_number() OVER (PARTITION BY r.within ORDER BY r.due_at) <= v_max_events AS claimed
      FROM ranked r
  ),
  written AS (
    -- Each cursor once: a moved one past its delivered event; a claimed head leased (due
    -- again when the lease runs out, its attempt counted); a moved head that is not claimed
    -- due from its change's creation.
    UPDATE tidemark_cursor k
       SET through = coalesce(p.through, k.through),
           last_sequence = p.last_sequence,
           advanced_at = CASE WHEN p.moved THEN now() ELSE k.advanced_at END,
           last_error = CASE WHEN p.moved THEN NULL ELSE k.last_error END,
           head_sequence = p.head,
           head_due_at = CASE WHEN p.claimed THEN v_lease_end WHEN p.head IS NULL THEN NULL ELSE p.due_at END,
           head_attempts = p.head_attempts + CASE WHEN p.claimed THEN 1 ELSE 0 END,
           head_leased = p.claimed
      FROM picked p
     WHERE (p.moved OR p.claimed) AND k.destination = p.destination AND k.partition_key = p.partition_key
  )
  SELECT c.position * 1024 + t.number, p.destination, e.key,
         tidemark_event_partition(c.partition_key, c.idempotency_key, c.sequence), e.sequence,
         tidemark_event_payload(c.payload, c.idempotency_key, e.key, e.sequence)::text, p.head_attempts + 1
    FROM picked p
    JOIN tidemark_change c ON c.partition_key = p.partition_key AND c.key_sequence = p.head
    JOIN tidemark_destination t ON t.name = p.destination
   CROSS JOIN LATERAL (SELECT coalesce(c.idempotency_key, p.destination || ':' || c.event_key) AS key,
                              tidemark_event_sequence(c.idempotency_key, c.sequence, p.last_sequence + 1) AS sequence) e
   WHERE p.claimed;
  GET DIAGNOSTICS claimed = ROW_COUNT;

  IF claimed < v_max_events THEN
    -- Revived letters, by their own due time, within each destination's limit.
    RETURN QUERY
    UPDATE tidemark_dead_letter l
       SET attempts = l.attempts + 1, next_attempt_at = v_lease_end, leased = true
      FROM (SELECT u.destination, u.position
              FROM unnest(p_destinations, p_limits) AS d(name, max_events)
             CROSS JOIN LATERAL (
               SELECT u.destination, u.position, u.next_attempt_at
                 FROM tidemark_dead_letter u
                WHERE u.destination = d.name AND u.status = 'pending' AND u.next_attempt_at <= now()
                ORDER BY u.next_attempt_at
                LIMIT greatest(d.max_events, 0)
                  FOR UPDATE SKIP LOCKED) u
             ORDER BY u.next_attempt_at
             LIMIT v_max_events - claimed) due,
           tidemark_change c, tidemark_destination t
     WHERE l.destination = due.destination AND l.position = due.position
       AND c.position = l.position AND t.name = l.destination
    RETURNING c.position * 1024 + t.number, l.destination,
              coalesce(c.idempotency_key, l.destination || ':' || c.event_key),
              tidemark_event_partition(c.partition_key, c.idempotency_key, c.sequence), l.sequence,
              tidemark_event_payload(c.payload, c.idempotency_key,
                                     coalesce(c.idempotency_key, l.destination || ':' || c.event_key), l.sequence)::text,
              l.attempts;
  END IF;
END
$$;

-- Records a failed attempt p_attempt of event p_id (relay/mark_failed.sql): p_status
-- 'pending' retries it after p_delay_ms, 'dead' gives up on it. Fenced by the attempt of the
-- claim that holds it, so a relay whose lease ran out cannot overwrite a newer claim or a
-- delivery. A dead head becomes a dead letter with its sequence, and its key's next change
-- is the head (a dead event does not block). Returns the rows changed.
CREATE FUNCTION tidemark_relay_mark_failed(p_id bigint, p_attempt int, p_status text, p_delay_ms bigint,
                                           p_error text) RETURNS bigint
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan SET jit = off
AS $$
#variable_conflict use_column
DECLARE
  v_changed bigint;
BEGIN
  UPDATE tidemark_dead_letter l
     SET status = p_status, next_attempt_at = now() + p_delay_ms * interval '1 millisecond',
         last_error = p_error, leased = false
    FROM tidemark_outbox_events(ARRAY[p_id], ARRAY[p_attempt]) e
   WHERE l.destination = e.destination AND l.position = e.position
     AND l.status = 'pending' AND l.leased AND l.attempts = p_attempt;
  GET DIAGNOSTICS v_changed = ROW_COUNT;
  IF v_changed > 0 THEN
    RETURN v_changed;
  END IF;

  PERFORM tidemark_lock_cursors(ARRAY[p_id]);
  IF p_status = 'pending' THEN
    UPDATE tidemark_cursor k
       SET head_due_at = now() + p_delay_ms * interval '1 millisecond', head_leased = false, last_error = p_error
      FROM tidemark_outbox_events(ARRAY[p_id], ARRAY[p_attempt]) e
     WHERE k.destination = e.destination AND k.partition_key = e.partition_key
       AND k.head_sequence = e.key_sequence AND k.head_leased AND k.head_attempts = p_attempt;
    GET DIAGNOSTICS v_changed = ROW_COUNT;
    RETURN v_changed;
  END IF;

  WITH given_up AS (
    SELECT k.destination, k.partition_key, e.position, k.head_sequence,
           tidemark_event_sequence(e.stored_key, e.stored_sequence, k.last_sequence + 1) AS sequence,
           n.key_sequence AS next, n.created_at AS next_due_at
      FROM tidemark_outbox_events(ARRAY[p_id], ARRAY[p_attempt]) e
      JOIN tidemark_cursor k
        ON k.destination = e.destination AND k.partition_key = e.partition_key
       AND k.head_sequence = e.key_sequence AND k.head_leased AND k.head_attempts = p_attempt
      LEFT JOIN LATERAL tidemark_next_change(k.destination, k.partition_key, k.head_sequence) n ON true
  ),
  lettered AS (
    INSERT INTO tidemark_dead_letter (destination, position, sequence, status, attempts, next_attempt_at, last_error)
    SELECT g.destination, g.position, g.sequence, 'dead', p_attempt,
           now() + p_delay_ms * interval '1 millisecond', p_error
      FROM given_up g
  )
  UPDATE tidemark_cursor k
     SET through = g.head_sequence, last_sequence = greatest(k.last_sequence, g.sequence), advanced_at = now(),
         head_sequence = g.next, head_due_at = g.next_due_at,
         head_attempts = 0, head_leased = false, last_error = NULL
    FROM given_up g
   WHERE k.destination = g.destination AND k.partition_key = g.partition_key;
  GET DIAGNOSTICS v_changed = ROW_COUNT;
  RETURN v_changed;
END
$$;

-- Renews the leases of the attempts p_attempts of the events p_ids (same order) to p_lease_ms
-- from now; returns the ids renewed (relay/renew.sql). Fenced like the marks: only while the
-- claim of that attempt still holds the event and its answer is not recorded (a mark ends the
-- lease), so a renewal that comes after the answer leaves the retry's due time alone.
CREATE FUNCTION tidemark_relay_renew(p_ids bigint[], p_attempts int[], p_lease_ms bigint) RETURNS SETOF bigint
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan SET jit = off
AS $$
DECLARE
  v_lease_end timestamptz := now() + p_lease_ms * interval '1 millisecond';
BEGIN
  PERFORM tidemark_lock_cursors(p_ids);
  RETURN QUERY
  UPDATE tidemark_cursor k
     SET head_due_at = greatest(k.head_due_at, v_lease_end)
    FROM tidemark_outbox_events(p_ids, p_attempts) e
   WHERE k.destination = e.destination AND k.partition_key = e.partition_key
     AND k.head_sequence = e.key_sequence AND k.head_leased AND k.head_attempts = e.attempt
  RETURNING e.id;
  RETURN QUERY
  UPDATE tidemark_dead_letter l
     SET next_attempt_at = greatest(l.next_attempt_at, v_lease_end)
    FROM tidemark_outbox_events(p_ids, p_attempts) e
   WHERE l.destination = e.destination AND l.position = e.position
     AND l.status = 'pending' AND l.leased AND l.attempts = e.attempt
  RETURNING e.id;
END
$$;

-- Re-drives the events p_ids whose status is in p_statuses with a fresh attempt budget, due
-- now (relay/retry_one.sql, relay/retry_all_dead.sql); returns their ids. A dead letter
-- becomes a pending one (delivered by its own due time, holding nothing back); a pending
-- head is due now with its attempts reset (kept while a relay holds it: its answer is fenced
-- by them); a pending event behind the head has no attempts yet and is returned as it is. A
-- delivered event is left alone.
CREATE FUNCTION tidemark_outbox_retry(p_ids bigint[], p_statuses text[]) RETURNS SETOF bigint
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan SET jit = off
AS $$
BEGIN
  PERFORM tidemark_lock_cursors(p_ids);
  RETURN QUERY
  UPDATE tidemark_dead_letter l
     SET status = 'pending', attempts = 0, next_attempt_at = now(), last_error = NULL, leased = false
    FROM tidemark_outbox_events(p_ids, NULL) e
   WHERE l.destination = e.destination AND l.position = e.position AND l.status = ANY (p_statuses)
  RETURNING e.id;
  IF 'pending' = ANY (p_statuses) THEN
    RETURN QUERY
    WITH events AS (
      SELECT e.*, k.head_sequence, k.through
        FROM tidemark_outbox_events(p_ids, NULL) e
        LEFT JOIN tidemark_cursor k ON k.destination = e.destination AND k.partition_key = e.partition_key
       WHERE e.key_sequence > coalesce(k.through, 0)
    ),
    heads AS (
      UPDATE tidemark_cursor k
         SET head_due_at = now(), last_error = NULL,
             head_attempts = CASE WHEN k.head_leased THEN k.head_attempts ELSE 0 END
        FROM events e
       WHERE k.destination = e.destination AND k.partition_key = e.partition_key
         AND k.head_sequence = e.key_sequence
    )
    SELECT e.id FROM events e;
  END IF;
END
$$;

-- The events of p_destination that are not delivered: from its oldest one on, never the whole
-- log (pending counts, view lag, status). Per key the positions follow the key_sequences, so
-- every pending change is at or after its key's head or not read yet by the ingest.
CREATE FUNCTION tidemark_undelivered(p_destination text)
RETURNS TABLE ("position" bigint, partition_key text, key_sequence bigint, created_at timestamptz, status text)
LANGUAGE plpgsql STABLE
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan SET jit = off
AS $$
#variable_conflict use_column
DECLARE
  v_from bigint;
  v_ingested pg_snapshot;
BEGIN
  SELECT t.ingested INTO v_ingested FROM tidemark_destination t WHERE t.name = p_destination;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  -- min(position + 0), not min(position): the planner would read the log in position order
  -- until the first match (a min/max path), which for the changes not read yet is the whole
  -- log when there is none.
  SELECT least((SELECT min(c.position + 0)
                  FROM tidemark_cursor k
                  JOIN tidemark_change c ON c.partition_key = k.partition_key AND c.key_sequence = k.head_sequence
                 -- head_due_at too: an index condition of tidemark_cursor_due, which holds only
                 -- the cursors with a head, where the primary key would read them all
                 WHERE k.destination = p_destination AND k.head_sequence IS NOT NULL AND k.head_due_at IS NOT NULL),
               -- the changes the destination has not read (as in tidemark_log_ingest)
               (SELECT min(c.position + 0)
                  FROM tidemark_change c
                 WHERE c.xid >= pg_snapshot_xmax(v_ingested) AND p_destination = ANY (c.destinations)),
               (SELECT min(c.position + 0)
                  FROM tidemark_change c
                 WHERE c.xid = ANY (ARRAY(SELECT pg_snapshot_xip(v_ingested)))
                   AND p_destination = ANY (c.destinations)))
    INTO v_from;
  IF v_from IS NOT NULL THEN
    RETURN QUERY
    -- The cursor by a subquery, a probe of its primary key per change: as a join, the planner
    -- with stale statistics of the cursors would rather filter the change against all of them.
    SELECT c.position, c.partition_key, c.key_sequence, c.created_at, 'pending'::text
      FROM tidemark_change c
     WHERE c.position >= v_from AND p_destination = ANY (c.destinations)
       AND c.key_sequence > coalesce((SELECT k.through FROM tidemark_cursor k
                                       WHERE k.destination = p_destination AND k.partition_key = c.partition_key), 0);
  END IF;
  RETURN QUERY
  SELECT c.position, c.partition_key, c.key_sequence, c.created_at, l.status
    FROM tidemark_dead_letter l
    JOIN tidemark_change c ON c.position = l.position
   WHERE l.destination = p_destination;
END
$$;

-- The outbox as users and dashboards query it: one row per (change, destination it feeds),
-- with the columns and meanings it had as a table, from the event after p_after_id on, in id
-- order (relay/list.sql pages by it: a page reads its own changes from the primary key). A
-- pending event's sequence counts on from its cursor's, a delivered one's counts back from it
-- (each counted over the key's changes between the event and the cursor, migrated ones aside:
-- they have their own numbers; a column nobody
-- reads is never computed, so counts by status or destination do not pay for it); a delivered
-- event's delivered_at is when its cursor last moved. The relay and the pending counts never
-- read it (tidemark_relay_claim, tidemark_undelivered).
CREATE FUNCTION tidemark_outbox_from(p_after_id bigint)
RETURNS TABLE (id bigint, destination text, idempotency_key text, partition_key text, sequence bigint, payload jsonb,
               status text, attempts int, next_attempt_at timestamptz, last_error text, created_at timestamptz,
               delivered_at timestamptz, "position" bigint, number int)
LANGUAGE sql STABLE AS $$
  SELECT e.position * 1024 + e.number,
         e.destination,
         e.idempotency_key,
         tidemark_event_partition(e.partition_key, e.stored_key, e.stored_sequence),
         e.sequence,
         tidemark_event_payload(e.payload, e.stored_key, e.idempotency_key, e.sequence),
         CASE WHEN e.letter_status IS NOT NULL THEN e.letter_status
              WHEN e.ahead THEN 'pending'
              ELSE 'delivered' END,
         CASE WHEN e.letter_status IS NOT NULL THEN e.letter_attempts
              WHEN NOT e.ahead THEN coalesce(e.delivered_attempts, 1)
              WHEN e.key_sequence = e.head_sequence THEN e.head_attempts
              ELSE 0 END,
         CASE WHEN e.letter_status IS NOT NULL THEN e.letter_due
              WHEN NOT e.ahead THEN NULL
              WHEN e.key_sequence = e.head_sequence THEN e.head_due_at
              ELSE e.created_at END,
         CASE WHEN e.letter_status IS NOT NULL THEN e.letter_error
              WHEN e.key_sequence = e.head_sequence THEN e.head_error END,
         e.created_at,
         CASE WHEN e.letter_status IS NULL AND NOT e.ahead THEN e.advanced_at END,
         e.position,
         e.number
    FROM (SELECT r.*,
                 CASE WHEN r.letter_status IS NOT NULL THEN r.letter_sequence
                      WHEN r.ahead THEN
                        tidemark_event_sequence(r.stored_key, r.stored_sequence, r.last_sequence + (
                          SELECT count(*) FROM tidemark_change o
                           WHERE o.partition_key = r.partition_key AND o.key_sequence > r.through
                             AND o.key_sequence <= r.key_sequence AND r.destination = ANY (o.destinations)
                             AND o.idempotency_key IS NULL))
                      ELSE
                        tidemark_event_sequence(r.stored_key, r.stored_sequence, r.last_sequence - (
                          SELECT count(*) FROM tidemark_change o
                           WHERE o.partition_key = r.partition_key AND o.key_sequence > r.key_sequence
                             AND o.key_sequence <= r.through AND r.destination = ANY (o.destinations)
                             AND o.idempotency_key IS NULL)) END AS sequence
            FROM (SELECT c.position, t.number, t.name AS destination, c.partition_key, c.key_sequence, c.payload,
                         c.created_at, coalesce(c.idempotency_key, t.name || ':' || c.event_key) AS idempotency_key,
                         c.idempotency_key AS stored_key, c.sequence AS stored_sequence,
                         coalesce(k.through, 0) AS through, coalesce(k.last_sequence, 0) AS last_sequence,
                         k.head_sequence, k.head_attempts, k.head_due_at, k.last_error AS head_error, k.advanced_at,
                         l.status AS letter_status, l.sequence AS letter_sequence, l.attempts AS letter_attempts,
                         l.next_attempt_at AS letter_due, l.last_error AS letter_error,
                         a.attempts AS delivered_attempts,
                         c.key_sequence > coalesce(k.through, 0) AS ahead
                    FROM tidemark_change c
                    JOIN tidemark_destination t ON t.name = ANY (c.destinations)
                    LEFT JOIN tidemark_cursor k ON k.destination = t.name AND k.partition_key = c.partition_key
                    LEFT JOIN tidemark_dead_letter l ON l.destination = t.name AND l.position = c.position
                    LEFT JOIN tidemark_delivery_attempts a ON a.destination = t.name AND a.position = c.position
                   WHERE c.position >= p_after_id / 1024 AND c.position * 1024 + t.number > p_after_id) r) e
$$;

CREATE VIEW outbox AS
SELECT id, destination, idempotency_key, partition_key, sequence, payload, status, attempts, next_attempt_at,
       last_error, created_at, delivered_at
  FROM tidemark_outbox_from(0);
