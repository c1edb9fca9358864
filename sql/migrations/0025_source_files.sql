-- A registry of the files read (docs/sources.md "Files that change"): for every file
-- of a file source, what the batch that last read it had read of it. The next run reads on
-- from `bytes` only when the file is still the one that was read (same device and inode, and
-- the same fingerprint over its first KiB and the KiB before `bytes`); otherwise it reads the
-- file again from its start, which the revision filter makes safe.
CREATE TABLE tidemark_source_files (
  pipeline    text   NOT NULL,
  source      text   NOT NULL,   -- the checkpoint's source: the file or folder's canonical path
  file        text   NOT NULL,   -- the file's name in its folder, escaped into valid text
  bytes       bigint NOT NULL CHECK (bytes >= 0),  -- every record before this offset was read
  device      bigint NOT NULL,
  inode       bigint NOT NULL,
  fingerprint text   NOT NULL,   -- hex SHA-256; '' when the file changed while it was read
  run_id      bigint NOT NULL,
  updated_at  timestamptz NOT NULL,  -- when a batch last moved it
  seen_at     timestamptz NOT NULL,  -- when a run last found the file in its folder (retention)
  PRIMARY KEY (pipeline, source, file)
);

-- How many files a run found changed and read again from their start (status, run --json).
ALTER TABLE runs ADD COLUMN rewritten_files integer NOT NULL DEFAULT 0;
