-- Releases lock_view_session.sql.
SELECT pg_advisory_unlock(hashtext('tidemark view ' || $1))
