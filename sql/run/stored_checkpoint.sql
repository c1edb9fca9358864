-- Where pipeline $1 stopped reading source $2 (no row: it has never committed a batch).
SELECT position FROM checkpoint WHERE pipeline = $1 AND source = $2
