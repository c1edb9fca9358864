-- tidemark_view_lag_seconds and tidemark_view_dead_events: per view (destination) in $1,
-- the age in seconds of its oldest event not yet applied (pending or dead: a dead event is
-- never applied, so the view lags behind it until it is retried or the view rebuilt), and
-- how many of its events are dead. Read from each destination's oldest undelivered change on
-- (tidemark_undelivered), never from the whole log.
SELECT d.name, COALESCE(extract(epoch FROM now() - min(u.created_at)), 0)::float8 AS lag_seconds,
       count(*) FILTER (WHERE u.status = 'dead') AS dead
  FROM unnest($1::text[]) AS d(name)
  LEFT JOIN LATERAL tidemark_undelivered(d.name) u ON true
 GROUP BY d.name
