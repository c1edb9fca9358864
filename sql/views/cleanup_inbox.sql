-- Deletes inbox rows processed more than $1 milliseconds ago; the caller has checked that
-- $1 exceeds the longest redelivery window of the relay (docs/rules.md rule 16).
DELETE FROM inbox WHERE processed_at < now() - $1::bigint * interval '1 millisecond'
