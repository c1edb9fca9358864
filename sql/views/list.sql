-- Every version of every view with its lag: the age of the oldest event of the view's
-- destination not yet applied, in seconds, 0 when nothing waits. An event that waits for a
-- predecessor (pending) or gave up waiting (dead) is not applied, so it counts: a view
-- never shows lag 0 while one of its events is stuck. Each view's destination is read once,
-- from its oldest undelivered change on (tidemark_undelivered), whatever its versions.
WITH waiting AS (
  SELECT n.name, min(u.created_at) AS oldest, count(*) FILTER (WHERE u.status = 'pending') AS pending,
         count(*) FILTER (WHERE u.status = 'dead') AS dead
    FROM (SELECT DISTINCT name FROM views) n
   CROSS JOIN LATERAL tidemark_undelivered(n.name) u
   GROUP BY n.name
)
SELECT v.name, v.version, v.status, v.position,
       to_char(v.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS created_at,
       COALESCE(extract(epoch FROM now() - p.oldest), 0)::float8 AS lag_seconds,
       COALESCE(p.pending, 0) AS pending,
       COALESCE(p.dead, 0) AS dead
  FROM views v
  LEFT JOIN waiting p ON p.name = v.name
 ORDER BY v.name, v.version
