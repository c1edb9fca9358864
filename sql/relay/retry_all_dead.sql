-- tidemark outbox retry --all-dead: one row per event revived (tidemark_outbox_retry). The
-- dead events are the dead letters; an event's id is its change's position * 1024 + its
-- destination's number.
SELECT id
  FROM tidemark_outbox_retry(ARRAY(SELECT l.position * 1024 + d.number
                                     FROM tidemark_dead_letter l JOIN tidemark_destination d ON d.name = l.destination
                                    WHERE l.status = 'dead'), '{dead}') AS revived(id)
