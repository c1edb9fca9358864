-- tidemark outbox retry ID and POST /v1/outbox/{id}/retry: re-drives event $1 with a fresh
-- attempt budget, due now, when its status is in $2 ('{pending,dead}' for the CLI, '{dead}'
-- for the console). A delivered event is left alone. A dead event becomes a revived letter,
-- delivered by its own due time (tidemark_outbox_retry, migrations/0029_change_log.sql).
SELECT id FROM tidemark_outbox_retry(ARRAY[$1::bigint], $2::text[]) AS revived(id)
