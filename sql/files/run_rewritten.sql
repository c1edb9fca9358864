-- How many files run $1 found changed and reads again from their start (status shows it).
UPDATE runs SET rewritten_files = $2 WHERE id = $1
