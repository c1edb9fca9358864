-- Registers version $2 of view $1 as building, filled from position $3. From its commit the
-- relay feeds it every new event; it goes live once the catch-up is done.
INSERT INTO views (name, version, status, position) VALUES ($1, $2, 'building', $3)
