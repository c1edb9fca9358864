-- One lease row per partition of the pipeline, free until a worker takes it.
-- $1 pipeline, $2 partitions
INSERT INTO tidemark_partitions (pipeline, partition)
SELECT $1, generate_series(0, $2::integer - 1)
ON CONFLICT DO NOTHING
