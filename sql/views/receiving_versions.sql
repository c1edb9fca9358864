-- The versions of view $1 that receive events, oldest first. FOR SHARE: dropping a version
-- waits for the sinks applying to it, so no event lands in a table after it is gone.
SELECT version FROM views WHERE name = $1 AND status <> 'retired' ORDER BY version FOR SHARE
