-- tidemark outbox retry ID: an operator re-drives a dead (or waiting) event with a fresh
-- attempt budget. A delivered event is left alone.
UPDATE outbox
SET status = 'pending', attempts = 0, next_attempt_at = now(), last_error = NULL
WHERE id = $1
  AND status <> 'delivered'
RETURNING id
