-- lock_view.sql for the session, until unlock_view_session.sql: taken before a REPEATABLE READ
-- transaction begins, so that its snapshot, taken at its first statement, already sees what
-- the holder before it committed (a version registered, changes retention deleted).
SELECT pg_advisory_lock(hashtext('tidemark view ' || $1))
