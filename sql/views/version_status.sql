-- The status of version $2 of view $1 (no row: it was never registered).
SELECT status FROM views WHERE name = $1 AND version = $2
