-- `tidemark status`: pipeline $1's undelivered outbox events per destination, told by the
-- `pipeline` its payloads carry, so that a destination several pipelines feed shows each
-- one its own. Delivered events are not counted (nor read: tidemark_undelivered reads each
-- destination from its oldest undelivered change on; the changes are then read by position).
SELECT d.name AS destination,
       count(*) FILTER (WHERE u.status = 'pending') AS pending,
       count(*) FILTER (WHERE u.status = 'dead') AS dead
  FROM tidemark_destination d
 CROSS JOIN LATERAL tidemark_undelivered(d.name) u
  JOIN tidemark_change c ON c.position = u.position
 WHERE c.payload->>'pipeline' = $1
 GROUP BY d.name
 ORDER BY d.name
