-- The view versions being built (neither live nor retired): a rebuild replays its view's
-- destination from the change log (pipeline/views/admin.cpp rebuild_view), so retention keeps
-- every change that feeds that destination while one exists (tidemark_change_retired).
SELECT name, version FROM views WHERE status NOT IN ('live', 'retired') ORDER BY name, version
