-- tidemark_outbox_pending{destination}
SELECT destination, count(*)
FROM outbox
WHERE status = 'pending'
GROUP BY destination
