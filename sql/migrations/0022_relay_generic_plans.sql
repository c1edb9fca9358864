-- Issue 15: the relay's claim is planned once per session, not on every call. Its statements
-- take the arrays of delivered ids and destinations as parameters, so PL/pgSQL kept choosing
-- custom plans and re-planned the claim's CTE on every call: 0.4 ms per call, 4.5 µs per event
-- at 90 events a call (pg_stat_statements, bench/relay_bench.sh's 100,000 pending). The plan
-- cannot be worse for it: the function already forbids sequential and bitmap scans and hash
-- and merge joins, so a generic plan is the same nested loop of index probes as a custom one.
ALTER FUNCTION tidemark_relay_claim(text[], bigint, bigint, bigint[], int[]) SET plan_cache_mode = force_generic_plan;
