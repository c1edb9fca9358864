-- Registers version 1 of view $1, live at once: it is created empty before any event, so it
-- reflects the full history from now on.
INSERT INTO views (name, version, status, position, live_at) VALUES ($1, 1, 'live', 'full history', now())
