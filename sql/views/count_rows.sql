-- The rows of one version's table (reported when a rebuild goes live).
SELECT count(*) AS row_count FROM {table}
