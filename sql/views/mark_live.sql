-- Version $2 of view $1 has caught up: reads may go to it.
UPDATE views SET status = 'live', live_at = now() WHERE name = $1 AND version = $2
