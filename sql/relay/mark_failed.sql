-- Records a failed attempt $2 of event $1: status $3 ('pending' to retry after $4 ms, or
-- 'dead'). Fenced by the attempt number of our claim (on the key's head while the event is
-- its head), so a relay whose lease ran out cannot overwrite a newer claim or a delivery.
-- The head of the event's key follows (tidemark_relay_mark_failed,
-- migrations/0020_head_leases.sql): a retry moves its due time, a dead head moves on to the
-- next pending sequence (a dead event does not block).
SELECT tidemark_relay_mark_failed($1::bigint, $2::int, $3::text, $4::bigint, $5::text)
