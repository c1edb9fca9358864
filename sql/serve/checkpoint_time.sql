-- When a pipeline's checkpoint last advanced (unix seconds), for the checkpoint gauge at start-up.
SELECT extract(epoch FROM max(updated_at))::float8 AS updated_at FROM checkpoint WHERE pipeline = $1
