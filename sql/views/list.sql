-- Every version of every view with its lag: the age of the oldest event of the view's
-- destination not yet applied (pending), in seconds; 0 when nothing waits.
SELECT v.name, v.version, v.status, v.position,
       to_char(v.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       COALESCE(extract(epoch FROM now() - p.oldest), 0)::float8 AS lag_seconds,
       COALESCE(p.pending, 0)
  FROM views v
  LEFT JOIN LATERAL (
    SELECT min(o.created_at) AS oldest, count(*) AS pending
      FROM outbox o WHERE o.status = 'pending' AND o.destination = v.name) p ON true
 ORDER BY v.name, v.version
