-- A scheduled run that never started because another process held the pipeline: the tick is
-- skipped and leaves no trace (as a refused `tidemark run` does).
DELETE FROM runs WHERE id = $1 AND status = 'queued'
