-- How many delivered events of destination $1 retention deleted, and the latest delivery
-- among them (retention/outbox_chunk.sql): a replay of the whole history would miss them.
SELECT deleted_rows, newest_deleted_at::text FROM tidemark_outbox_trimmed WHERE destination = $1
