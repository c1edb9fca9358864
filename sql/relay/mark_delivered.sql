-- Marks the events $1 ('{1,2,3}') delivered. Not fenced by attempts: a 2xx is true whoever
-- sent it; a row already delivered stays as it is.
UPDATE outbox
SET status = 'delivered',
    delivered_at = now(),
    last_error = NULL
WHERE id = ANY ($1::bigint[])
  AND status = 'pending'
