-- tidemark outbox retry --all-dead: one row per event revived (tidemark_outbox_retry).
SELECT id
  FROM tidemark_outbox_retry(ARRAY(SELECT o.id FROM outbox o WHERE o.status = 'dead'), '{dead}') AS revived(id)
