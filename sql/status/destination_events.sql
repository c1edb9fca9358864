-- `tidemark status`: pipeline $1's undelivered outbox events per destination, told by the
-- `pipeline` its payloads carry, so that a destination several pipelines feed shows each
-- one its own. Delivered events are not counted (nor read: the filter on status keeps to
-- the undelivered rows).
SELECT destination,
       count(*) FILTER (WHERE status = 'pending') AS pending,
       count(*) FILTER (WHERE status = 'dead') AS dead
  FROM outbox
 WHERE (status = 'pending' OR status = 'dead') AND payload->>'pipeline' = $1
 GROUP BY destination
 ORDER BY destination
