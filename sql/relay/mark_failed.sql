-- Records a failed attempt of event $1: status $3 ('pending' to retry after $4 ms, or
-- 'dead'). Fenced by the attempt number $2 of our claim, so a relay whose lease ran out
-- cannot overwrite a newer claim or a delivery. The head of the event's key follows
-- (tidemark_relay_mark_failed, migrations/0015_destination_heads.sql): a retry moves its due
-- time, a dead head moves on to the next pending sequence (a dead event does not block).
SELECT tidemark_relay_mark_failed($1::bigint, $2::int, $3::text, $4::bigint, $5::text)
