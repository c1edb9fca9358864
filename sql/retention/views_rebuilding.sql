-- The view versions being built (neither live nor retired): a rebuild replays its view's
-- destination from the outbox (pipeline/views/admin.cpp rebuild_view), so retention keeps
-- every outbox row of that destination while one exists.
SELECT name, version FROM views WHERE status NOT IN ('live', 'retired') ORDER BY name, version
