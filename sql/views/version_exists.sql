-- Whether version $2 of view $1 was ever registered, retired or not: versions are never
-- reused, so a retired one still blocks a rebuild under its number.
SELECT 1 FROM views WHERE name = $1 AND version = $2
