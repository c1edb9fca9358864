-- One chunk of retention.requests: up to $2 webhook-ids received more than $1 milliseconds
-- ago, oldest first (index run_requests_received). The 5-minute signature tolerance keeps
-- their requests from being replayed afterwards. Returns how many were deleted.
WITH chunk AS (
  SELECT request_id FROM run_requests
   WHERE received_at < now() - $1::bigint * interval '1 millisecond'
   ORDER BY received_at LIMIT $2
)
DELETE FROM run_requests q USING chunk c WHERE q.request_id = c.request_id
