-- A released record keeps its original position: released again and rejected
-- again, it is quarantined at the same position, with the same reason and raw text as the
-- entry it was released from. The entry it replaces is released by then, so a record is
-- quarantined once among the open entries only; released entries keep their history.
DROP INDEX quarantine_once;
CREATE UNIQUE INDEX quarantine_once ON quarantine (pipeline, source, position, reason, md5(raw))
 WHERE released_at IS NULL;
