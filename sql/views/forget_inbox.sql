-- Forgets the events a dropped version's table ($1) had applied: its dedup rows are useless.
DELETE FROM inbox WHERE consumer = $1
