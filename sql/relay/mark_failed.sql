-- Records a failed attempt of event $1: status $3 ('pending' to retry after $4 ms, or
-- 'dead'). Fenced by the attempt number $2 of our claim, so a relay whose lease ran out
-- cannot overwrite a newer claim or a delivery.
UPDATE outbox
SET status = $3,
    next_attempt_at = now() + $4 * interval '1 millisecond',
    last_error = $5
WHERE id = $1
  AND attempts = $2
  AND status = 'pending'
