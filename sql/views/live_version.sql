-- The newest live version of view $1 (NULL when none is live): reads go to it.
SELECT max(version) AS version FROM views WHERE name = $1 AND status = 'live'
