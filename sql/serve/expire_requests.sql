-- retention.requests: webhook-ids older than the window ($1 milliseconds) are forgotten.
-- The 5-minute signature tolerance keeps their requests from being replayed afterwards.
DELETE FROM run_requests WHERE received_at < now() - $1::bigint * interval '1 millisecond'
