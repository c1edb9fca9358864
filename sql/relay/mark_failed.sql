-- Records a failed attempt $2 of event $1: status $3 ('pending' to retry after $4 ms, or
-- 'dead'), with the error $5. Fenced by the attempt number of our claim, so a relay whose lease
-- ran out cannot overwrite a newer claim or a delivery. A dead head becomes a dead letter and
-- its key's next change is the head: a dead event does not block
-- (tidemark_relay_mark_failed, migrations/0029_change_log.sql).
SELECT tidemark_relay_mark_failed($1::bigint, $2::int, $3::text, $4::bigint, $5::text)
