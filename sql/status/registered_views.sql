-- `tidemark status`: the views with a version that receives events; a destination of that
-- name is a view destination even when the config no longer says so.
SELECT DISTINCT name FROM views WHERE status <> 'retired' ORDER BY name
