-- Records the deliveries $4 ('{1,2,3}') and claims up to $2 due events of the destinations
-- $1 ('{a,b}') for this relay, in one statement: one round trip per relay loop instead of
-- two. Claiming is by status, never by an id high-water mark: an id taken early but
-- committed late is still due (docs/rules.md rule 11).
-- Marking delivered is not fenced by attempts: a 2xx is true whoever sent it; a row already
-- delivered (or dead) stays as it is.
-- The claim is a lease: attempts counts this attempt and next_attempt_at moves $3 ms ahead,
-- committed before anything is sent, so other relays skip the row while it is in flight
-- (SKIP LOCKED: they never wait for each other) and, if this relay dies, it is due again
-- when the lease runs out. attempts doubles as the fencing token of the marks.
WITH delivered AS (
  -- Runs even though nothing reads it (PostgreSQL runs every data-modifying CTE).
  UPDATE outbox
  SET status = 'delivered',
      delivered_at = now(),
      last_error = NULL
  WHERE id = ANY ($4::bigint[])
    AND status = 'pending'
),
due AS (
  SELECT o.id
  FROM outbox o
  WHERE o.status = 'pending'
    AND o.next_attempt_at <= now()
    AND o.destination = ANY ($1::text[])
    -- Every CTE sees the snapshot from before `delivered`, so the events delivered just now
    -- still look pending: they are left out by id. Never claim them (a lease run out): one
    -- statement must not update a row twice.
    AND o.id <> ALL ($4::bigint[])
    -- per-key order: only the lowest pending sequence of its (destination, partition_key)
    -- may go, so nothing is sent while an earlier event of the key is in flight, waiting
    -- for a retry or not yet claimed; dead events, and those delivered by this statement,
    -- do not block. A scalar subquery, not NOT EXISTS: it stays a per-row probe of
    -- outbox_partition instead of becoming a hash anti-join over every pending row.
    AND (o.partition_key IS NULL OR o.sequence IS NULL OR o.sequence = (
      SELECT min(earlier.sequence)
      FROM outbox earlier
      WHERE earlier.status = 'pending'
        AND earlier.destination = o.destination
        AND earlier.partition_key = o.partition_key
        AND earlier.id <> ALL ($4::bigint[])))
  ORDER BY o.next_attempt_at
  LIMIT $2
  FOR UPDATE OF o SKIP LOCKED
)
UPDATE outbox
SET attempts = outbox.attempts + 1,
    next_attempt_at = now() + $3 * interval '1 millisecond'
FROM due
WHERE outbox.id = due.id
RETURNING outbox.id, outbox.destination, outbox.idempotency_key, outbox.partition_key, outbox.sequence,
          outbox.payload::text, outbox.attempts
