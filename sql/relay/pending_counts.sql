-- tidemark_outbox_pending{destination}: each destination's pending events, read from its
-- oldest undelivered change on (tidemark_undelivered), never from the whole log.
SELECT d.name AS destination, count(*)
  FROM tidemark_destination d
 CROSS JOIN LATERAL tidemark_undelivered(d.name) u
 WHERE u.status = 'pending'
 GROUP BY d.name
