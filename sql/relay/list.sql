-- tidemark outbox list and GET /v1/outbox: filters are optional ($1 status, $2 destination;
-- NULL = any). $4 is the id to list after (0: from the oldest), for paging by id: a page
-- never repeats an event of an earlier one, and reads the log from its own first change on
-- (tidemark_outbox_from, migrations/0029_change_log.sql). A delivered event has no next
-- attempt: ''.
SELECT id, destination, status, attempts, idempotency_key,
       coalesce(to_char(next_attempt_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), '') AS next_attempt_at,
       coalesce(last_error, '') AS last_error,
       coalesce(to_char(delivered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), '') AS delivered_at,
       partition_key, sequence,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS created_at
FROM tidemark_outbox_from($4)
WHERE ($1::text IS NULL OR status = $1)
  AND ($2::text IS NULL OR destination = $2)
ORDER BY position, number
LIMIT $3
