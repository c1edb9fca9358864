-- The relay's claim is planned once per session and never compiled by JIT.
--
-- Its statements take the arrays of delivered ids and destinations as parameters, so
-- PL/pgSQL kept choosing custom plans and planned the claim's CTE again on every call: 0.4 ms
-- a call, 4.5 µs per event at 90 events a call (pg_stat_statements, bench/relay_bench.sh's
-- 100,000 pending). A generic plan is no worse here: the function already forbids sequential
-- and bitmap scans and hash and merge joins, so it is the same nested loop of index probes.
--
-- The planner's cost estimate of that statement grows with the tables (it assumes a claim
-- could take every head), and past jit_above_cost (100,000, reached at about 100,000 keys)
-- PostgreSQL compiled it with JIT on every call: 17 ms of compilation for a 2 ms claim of 144
-- events, which made the relay's events/s halve from 100,000 to 1,000,000 pending. A claim
-- reads a few rows per event; compiling it never pays.
ALTER FUNCTION tidemark_relay_claim(text[], bigint, bigint, bigint[], int[])
  SET plan_cache_mode = force_generic_plan
  SET jit = off;
