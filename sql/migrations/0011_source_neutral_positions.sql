-- Positions and quarantine entries become source-neutral: a source other than
-- files (a stream, a query) has no file name or byte offset, and formats belong to the
-- connectors.
--
-- checkpoint.position is the source's opaque text, ordered by the source itself when a batch
-- advances it (commit/lock_checkpoint.sql, commit/advance_checkpoint.sql). The file source's
-- columns fold into it: its text is "file:offset" with the name escaped, which `file` holds
-- already, except in rows written before 0007 (file_bytes NULL) whose names were stored as
-- they are (valid UTF-8): there only a backslash needs its escape.
UPDATE checkpoint
   SET position = CASE WHEN file_bytes IS NULL THEN replace(file, E'\\', E'\\\\') ELSE file END
                  || ':' || byte_offset;
ALTER TABLE checkpoint DROP COLUMN file, DROP COLUMN byte_offset, DROP COLUMN file_bytes;

-- quarantine.format is whatever the connector that read the record calls its format, and
-- decode_context what its decoder needs besides the raw text to decode it again (a header
-- line; '' when nothing). Stored escaped, as csv_header was.
ALTER TABLE quarantine DROP CONSTRAINT quarantine_format_check;
ALTER TABLE quarantine RENAME COLUMN csv_header TO decode_context;
UPDATE quarantine SET decode_context = '' WHERE decode_context IS NULL;
ALTER TABLE quarantine ALTER COLUMN decode_context SET DEFAULT '',
                       ALTER COLUMN decode_context SET NOT NULL;
