-- Serializes the processes that create, rebuild or drop versions of view $1 (for this
-- transaction): the second one sees what the first did.
SELECT pg_advisory_xact_lock(hashtext('tidemark view ' || $1))
