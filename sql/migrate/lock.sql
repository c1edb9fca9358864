-- Held until the migration's transaction ends: a second process waits here, then sees the
-- migration as applied. $1 the migration lock id
SELECT pg_advisory_xact_lock($1)
