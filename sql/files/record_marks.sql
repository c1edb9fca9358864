-- What the batch read of each file it read from ($3.. are parallel arrays, one element per
-- file), in the batch's transaction: the registry moves with the records and the checkpoint,
-- so a killed run resumes each file exactly where its last committed batch left it. A file
-- read again from its start moves back: the registry says what was read, not the most ever.
-- $1 pipeline, $2 source, $3 files, $4 bytes, $5 devices, $6 inodes, $7 fingerprints, $8 run_id
INSERT INTO tidemark_source_files AS f (pipeline, source, file, bytes, device, inode, fingerprint, run_id,
                                        updated_at, seen_at)
SELECT $1, $2, m.file, m.bytes, m.device, m.inode, m.fingerprint, $8, statement_timestamp(), statement_timestamp()
  FROM unnest($3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::text[])
         AS m(file, bytes, device, inode, fingerprint)
ON CONFLICT (pipeline, source, file) DO UPDATE
   SET bytes = EXCLUDED.bytes, device = EXCLUDED.device, inode = EXCLUDED.inode,
       fingerprint = EXCLUDED.fingerprint, run_id = EXCLUDED.run_id, updated_at = EXCLUDED.updated_at,
       seen_at = EXCLUDED.seen_at
