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
    -- per-key order: nothing is sent while an earlier event of its key is pending (in
    -- flight, waiting for a retry, or not yet claimed); dead events do not block
    AND NOT EXISTS (
      SELECT 1
      FROM outbox earlier
      WHERE earlier.status = 'pending'
        AND earlier.destination = o.destination
        AND earlier.partition_key = o.partition_key
        AND earlier.sequence < o.sequence)
  ORDER BY o.next_attempt_at, o.id
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
