-- The first statement of every batch of a run that holds the pipeline's locks (a partition's
-- batch has its lease instead: lease/fence.sql): the batch commits only while its run is still
-- 'running'. A run that lost both of its sessions (a server restart, a network cut) can find
-- the pipeline taken by another run when it reconnects, and then take back one lock while the
-- other run, which lost a session of its own, still commits on the other: the other run's
-- start marked this one failed (run/fail_abandoned_runs.sql), so no batch of it commits
-- again. The share lock orders the batch before such a start or after it: the start's UPDATE
-- waits for this batch's commit.
-- $1 the run
SELECT status FROM runs WHERE id = $1 FOR SHARE
