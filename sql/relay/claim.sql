-- Claims up to $2 due events of the destinations $1 ('{a,b}') for this relay and returns
-- them. Claiming is by status, never by an id high-water mark: an id taken early but
-- committed late is still due (DESIGN rule 11).
-- The claim is a lease: attempts counts this attempt and next_attempt_at moves $3 ms ahead,
-- committed before anything is sent, so other relays skip the row while it is in flight
-- (SKIP LOCKED: they never wait for each other) and, if this relay dies, it is due again
-- when the lease runs out. attempts doubles as the fencing token of the marks.
WITH due AS (
  SELECT o.id
  FROM outbox o
  WHERE o.status = 'pending'
    AND o.next_attempt_at <= now()
    AND o.destination = ANY ($1::text[])
    -- per-key order: only the lowest pending sequence of its (destination, partition_key)
    -- may go, so nothing is sent while an earlier event of the key is in flight, waiting
    -- for a retry or not yet claimed; dead events do not block. A scalar subquery, not
    -- NOT EXISTS: it stays a per-row probe of outbox_partition instead of becoming a hash
    -- anti-join over every pending row.
    AND (o.partition_key IS NULL OR o.sequence IS NULL OR o.sequence = (
      SELECT min(earlier.sequence)
      FROM outbox earlier
      WHERE earlier.status = 'pending'
        AND earlier.destination = o.destination
        AND earlier.partition_key = o.partition_key))
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
