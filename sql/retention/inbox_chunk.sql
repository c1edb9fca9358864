-- One chunk of retention.inbox: up to $2 inbox rows processed more than $1 milliseconds ago,
-- oldest first (index inbox_processed_at). The caller has checked that $1 exceeds the
-- longest redelivery window of the relay (docs/rules.md rule 16). Returns how many were deleted.
WITH chunk AS (
  SELECT consumer, event_id FROM inbox
   WHERE processed_at < now() - $1::bigint * interval '1 millisecond'
   ORDER BY processed_at LIMIT $2
)
DELETE FROM inbox i USING chunk c WHERE i.consumer = c.consumer AND i.event_id = c.event_id
