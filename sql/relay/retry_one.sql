-- tidemark outbox retry ID: an operator re-drives a dead (or waiting) event with a fresh
-- attempt budget, due now. A delivered event is left alone. Below its key's head, the event
-- becomes the head (tidemark_outbox_retry, migrations/0015_destination_heads.sql).
SELECT id FROM tidemark_outbox_retry(ARRAY[$1::bigint], '{pending,dead}') AS revived(id)
