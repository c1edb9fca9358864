-- The registry of source $2 of pipeline $1, handed to the source before it seeks.
SELECT file, bytes, device, inode, fingerprint
  FROM tidemark_source_files
 WHERE pipeline = $1 AND source = $2
