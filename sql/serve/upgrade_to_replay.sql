-- A replay request joined a queued resume run: the run re-reads from the start, which
-- covers what the resume would have read (the checkpoint never moves backwards).
UPDATE runs SET mode = 'replay' WHERE id = $1 AND status = 'queued'
