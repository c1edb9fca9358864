-- The run of pipeline $1 that holds its lock, for the message of a refused quarantine release:
-- its latest run still 'running' that is not a partition's (those hold a lease, not the lock).
SELECT id, COALESCE(reason, '') AS reason FROM runs WHERE pipeline = $1 AND status = 'running' AND worker IS NULL
 ORDER BY id DESC LIMIT 1
