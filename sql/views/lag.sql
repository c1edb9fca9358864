-- tidemark_view_lag_seconds: per view (destination) in $1, the age of the oldest event not
-- yet applied, in seconds.
SELECT d.name, COALESCE(extract(epoch FROM now() - min(o.created_at)), 0)::float8
  FROM unnest($1::text[]) AS d(name)
  LEFT JOIN outbox o ON o.destination = d.name AND o.status = 'pending'
 GROUP BY d.name
