-- `tidemark status`: pipeline $1's undelivered outbox events per destination, told by the
-- `pipeline` its payloads carry, so that a destination several pipelines feed shows each
-- one its own. Delivered events are not counted (nor read: tidemark_undelivered reads each
-- destination from its oldest undelivered change on, and each such change is looked up by
-- its position).
SELECT d.name AS destination,
       count(*) FILTER (WHERE u.status = 'pending') AS pending,
       count(*) FILTER (WHERE u.status = 'dead') AS dead
  FROM tidemark_destination d
 CROSS JOIN LATERAL tidemark_undelivered(d.name) u
 WHERE (SELECT c.payload->>'pipeline' FROM tidemark_change c WHERE c.position = u.position) = $1
 GROUP BY d.name
 ORDER BY d.name
