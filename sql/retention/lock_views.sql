-- Takes, for this transaction, the lock that `views rebuild` takes while it registers a
-- version (sql/views/lock_view.sql), for every view: a rebuild cannot begin between the
-- chunk's look at the views registry and its delete. Name order, so two callers never deadlock.
SELECT pg_advisory_xact_lock(hashtext('tidemark view ' || name))
  FROM (SELECT DISTINCT name FROM views ORDER BY name) AS names
