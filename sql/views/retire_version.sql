-- Retires version $2 of view $1. It waits for the sinks holding the row FOR SHARE
-- (receiving_versions.sql), so no event is applied to the table after it is dropped.
UPDATE views SET status = 'retired', retired_at = now() WHERE name = $1 AND version = $2
