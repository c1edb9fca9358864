-- Renews the leases of attempts in flight: events $1 ('{1,2}') with their attempts $2 (same
-- order), $3 ms from now; returns the ids renewed, the others' leases were lost
-- (tidemark_relay_renew, migrations/0029_change_log.sql, says how it is fenced).
SELECT id FROM tidemark_relay_renew($1::bigint[], $2::int[], $3::bigint) AS renewed(id)
