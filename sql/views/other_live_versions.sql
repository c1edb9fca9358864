-- How many versions of view $1 other than $2 are live: the last live version is never
-- dropped, so reads always have a table.
SELECT count(*) AS live_versions FROM views WHERE name = $1 AND version <> $2 AND status = 'live'
