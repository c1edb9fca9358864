-- POST /v1/outbox/{id}/retry: re-drives one dead event as `tidemark outbox retry` does (a
-- fresh attempt budget, due now; below its key's head it becomes the head), through the same
-- tidemark_outbox_retry (migrations/0015_destination_heads.sql), but only a dead one: the
-- console's Retry is for dead letters, and a waiting event is the relay's to schedule.
SELECT id FROM tidemark_outbox_retry(ARRAY[$1::bigint], '{dead}') AS revived(id)
