-- Checkpoints order file names by their bytes. `file` holds the name
-- escaped into valid text (a file name need not be UTF-8), and escaped names do not sort as
-- the bytes do, which is the order the file source reads a folder in. NULL in rows written
-- before: their names were valid UTF-8 stored as they are, so their text is their bytes
-- (commit/advance_checkpoint.sql falls back to it).
ALTER TABLE checkpoint ADD COLUMN file_bytes bytea;
