-- tidemark outbox retry --all-dead
UPDATE outbox
SET status = 'pending', attempts = 0, next_attempt_at = now(), last_error = NULL
WHERE status = 'dead'
