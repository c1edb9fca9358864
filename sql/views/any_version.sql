-- Whether view $1 has any version yet (its first is created once, on first start).
SELECT 1 FROM views WHERE name = $1
