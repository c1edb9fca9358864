-- The rows of one version's table (reported when a rebuild goes live).
SELECT count(*) FROM {table}
