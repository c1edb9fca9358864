#!/usr/bin/env bash
# The commit's cost model (docs/performance.md "Cost model"): what each
# part of one batch's commit costs per row, in time and WAL bytes, and how that grows with
# the batch size, the number of destinations and the stored rows.
#
# The commit is bench/baseline.sql, the hand-written equivalent of `tidemark run`'s
# statement, cut into its parts, each its own statement over temporary tables (which write
# no WAL), in one transaction that is rolled back, so that every repetition meets the same
# stored rows:
#   copy       \copy of the batch into the staging table
#   group      in-batch grouping: one row per (key, revision), conflicts, the candidate
#   join       the conflict join: each version against its stored row (LEFT JOIN transaction_state)
#   upsert     the revision-filtered upsert into transaction_state
#   sequences  the destinations' registration (no write once registered) and the per-account
#              counters (INSERT … ON CONFLICT DO UPDATE), once per key whatever the destinations
#   payload    building the changes: event keys, key sequences, the jsonb payload
#   log        inserting them into the change log (tidemark_change), with its indexes: one
#              row per change, whatever the number of destinations
#   ledger     the batch_ledger row and the checkpoint
# Each part is timed on the server (clock_timestamp) and its WAL measured as the difference
# of pg_current_wal_insert_lsn(); per row = divided by the batch's input rows. The log's
# indexes are priced by subtraction: the log part is measured with every index, with each
# one dropped in turn (DROP INDEX inside the rolled-back transaction) and with none (only
# the keys). A first, uncounted repetition runs every part under EXPLAIN (ANALYZE,
# BUFFERS, WAL); its plans are in the log folder (cost-STORED-BATCH-DESTINATIONS.out).
# Not measured here: the quarantine (the dataset has no conflicts) and the COMMIT's WAL
# flush (the transaction is rolled back); run_bench.sh's whole runs include both.
#
# The stored rows come from `tidemark run` of the dataset's first SIZE rows (one `ledger`
# destination); the measured batch is the BATCH rows after them, so it has the dataset's mix
# (60% new keys, 25% newer revisions, 10% stale, 5% duplicates).
#
#   bench/cost_model.sh                                   # 1M stored rows (~5 min)
#   SIZES="1000000 10000000" bench/cost_model.sh          # and 10M (~20 min more)
#
# SIZES ("1000000")            stored rows before the measured batch, ascending
# BATCHES ("1000 10000 50000") batch sizes, one destination
# DESTINATIONS ("1 2 4")       destination counts, at batch DEST_BATCH
# DEST_BATCH (10000)
# FULL (0)                     1: every batch size and destination count at every size; else
#                              the sizes after the first measure DEST_BATCH, 1 destination
# REPS (3)                     repetitions of every index variant; the median is reported
# SEED (42), WORK (/tmp/tidemark-cost), TIDEMARK (build-bench/tidemark), PGBIN
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
SIZES="${SIZES:-1000000}"
BATCHES="${BATCHES:-1000 10000 50000}"
DESTINATIONS="${DESTINATIONS:-1 2 4}"
DEST_BATCH="${DEST_BATCH:-10000}"
REPS="${REPS:-3}"
SEED="${SEED:-42}"
WORK="${WORK:-/tmp/tidemark-cost}"
TIDEMARK="${TIDEMARK:-$repo/build-bench/tidemark}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
PIPELINE=bench

# shellcheck source=bench/bench_lib.sh
source "$here/bench_lib.sh"
[[ -x "$TIDEMARK" ]] || die "$TIDEMARK not found (see docs/performance.md, 'The command')"
[[ -x "$PGBIN/initdb" ]] || die "PostgreSQL 15 server binaries not found in $PGBIN (set PGBIN)"

mkdir -p "$WORK/data" "$WORK/logs"
chmod 755 "$WORK"
stamp="$(date +%Y%m%d-%H%M%S)"
results="$WORK/logs/cost-$stamp.tsv"
printf 'stored\tbatch\tdestinations\tvariant\trep\tpart\tms\twal_bytes\tinput_rows\tlog_rows\n' >"$results"

# The same cluster settings as run_bench.sh; autovacuum off, so that no vacuum runs inside
# a measurement (the script vacuums between measurements itself).
start_cluster -c autovacuum=off
url="$base_url/cost"

lines() { sed -n "$2,$3p;$3q" "$1"; }  # file first last: lines first..last (1 is the header)

largest=0
for s in $SIZES; do (( s > largest )) && largest=$s; done
max_batch=0
for b in $BATCHES $DEST_BATCH; do (( b > max_batch )) && max_batch=$b; done
total=$((largest + max_batch))
csv="$(generated_csv "$total")"

config="$WORK/cost.yaml"
cat >"$config" <<EOF
pipelines:
  $PIPELINE:
    source: {kind: file, path: $WORK/data, format: csv}
    batch_size: 10000
    destinations:
      - {name: ledger, kind: http, url: http://127.0.0.1:9/events, secret_env: BENCH_LEDGER_SECRET}
EOF
export BENCH_LEDGER_SECRET=whsec_YmVuY2htYXJrLXNlY3JldA==

psql -X -q -d "$base_url/postgres" -c "DROP DATABASE IF EXISTS cost" -c "CREATE DATABASE cost"
"$TIDEMARK" migrate --database "$url" >"$WORK/logs/migrate.log" 2>&1 || die "migrate failed, see $WORK/logs/migrate.log"
indexes="$(psql_q cost "SELECT string_agg(indexrelid::regclass::text, ' ' ORDER BY 1) FROM pg_index
                   WHERE indrelid = 'tidemark_change'::regclass AND NOT indisprimary AND NOT indisunique")"
log "change log secondary indexes of this binary: ${indexes:-none}"

# One measurement: REPS repetitions of every index variant, each in a rolled-back transaction.
measure() {  # stored batch destinations
  local stored="$1" batch="$2" dests="$3" part="$WORK/data/batch-$1-$2.csv" script="$WORK/logs/cost-$1-$2-$3.psql"
  local dlist="ledger" d
  for ((d = 2; d <= dests; d++)); do dlist="$dlist,dest$d"; done
  lines "$csv" $((stored + 2)) $((stored + 1 + batch)) >"$part"
  # Registered outside the rolled-back transactions, as a pipeline's destinations are after its first batch.
  psql_q cost "SELECT tidemark_register_destinations('{$dlist}')" >/dev/null
  local variants="all key" i
  for i in $indexes; do variants="$variants -$i"; done
  {
    echo '\set ON_ERROR_STOP on'
    echo "\\set pipeline $PIPELINE"
    echo "\\set dests '{$dlist}'"
    echo "SET random_page_cost = 1.1;"  # as tidemark's connections (sql/commit/create_stage.sql)
    local rep variant first=1 list
    # Repetition 0 is variant `all` under EXPLAIN (ANALYZE, BUFFERS, WAL), for the log: not counted.
    for ((rep = 0; rep <= REPS; rep++)); do
      list="$variants"
      (( rep == 0 )) && list=all
      for variant in $list; do
        echo "\\set variant '$variant'"
        echo "\\set rep $rep"
        echo 'BEGIN;'
        case "$variant" in
          all) ;;
          key) for i in $indexes; do echo "DROP INDEX $i;"; done ;;
          -*) echo "DROP INDEX ${variant#-};" ;;
        esac
        echo "\\set explain ''"
        (( first )) && echo "\\set explain 'EXPLAIN (ANALYZE, BUFFERS, WAL)'"
        cat <<SQL
CREATE TEMP TABLE bench_stage (ord bigint GENERATED ALWAYS AS IDENTITY, transaction_id text NOT NULL,
  source_revision bigint NOT NULL, amount numeric(12,2) NOT NULL, account_id text, occurred_at timestamptz);
CREATE TEMP TABLE bench_versions (transaction_id text, source_revision bigint, first_ord bigint, records bigint,
  amount numeric(12,2), account_id text, occurred_at timestamptz, batch_conflict bool, candidate bool);
CREATE TEMP TABLE bench_stored (LIKE bench_versions, stored_revision bigint, stored_amount numeric,
  stored_account_id text, stored_occurred_at timestamptz, conflict bool);
CREATE TEMP TABLE bench_upserted (transaction_id text);
CREATE TEMP TABLE bench_applied (LIKE bench_stored, partition_key text, nth bigint, in_batch bigint);
CREATE TEMP TABLE bench_sequenced (partition_key text, last_sequence bigint);
CREATE TEMP TABLE bench_payload (event_key text, partition_key text, key_sequence bigint, payload jsonb,
  first_ord bigint);
INSERT INTO runs (pipeline, trigger, mode, status, started_at)
VALUES (:'pipeline', 'cli', 'resume', 'running', now()) RETURNING id AS run_id \\gset
SELECT clock_timestamp() AS t0, pg_current_wal_insert_lsn() AS l0 \\gset
\\copy bench_stage (transaction_id, source_revision, amount, account_id, occurred_at) FROM '$part' WITH (FORMAT csv)
SELECT :stored, :batch, :destinations, :'variant', :rep, 'copy',
       round((extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000)::numeric, 3),
       pg_current_wal_insert_lsn() - :'l0'::pg_lsn, :batch, 0;
SELECT clock_timestamp() AS t0, pg_current_wal_insert_lsn() AS l0 \\gset
SQL
        echo "\\i $here/cost_model.sql"
        echo 'ROLLBACK;'
        first=0
      done
    done
  } >"$script"
  psql -X -q -A -t -F $'\t' -v ON_ERROR_STOP=1 -v stored="$stored" -v batch="$batch" -v destinations="$dests" \
    -v part="$part" -d "$url" -f "$script" >"$WORK/logs/cost-$stored-$batch-$dests.out" 2>&1 ||
    die "measurement failed, see $WORK/logs/cost-$stored-$batch-$dests.out"
  grep -P '^\d+\t\d+\t\d+\t' "$WORK/logs/cost-$stored-$batch-$dests.out" >>"$results"
  psql_q cost "VACUUM transaction_state, tidemark_change, tidemark_partition_sequence" >/dev/null
  psql_q cost "CHECKPOINT" >/dev/null
}

loaded=0
for stored in $SIZES; do
  log "loading rows $((loaded + 1))..$stored with tidemark run"
  head -n 1 "$csv" >"$WORK/data/load.csv"
  lines "$csv" $((loaded + 2)) $((stored + 1)) >>"$WORK/data/load.csv"
  "$TIDEMARK" run --pipeline "$PIPELINE" --config "$config" --database "$url" --source "$WORK/data/load.csv" \
    --batch-size 10000 --json >"$WORK/logs/load-$stored.out" 2>"$WORK/logs/load-$stored.err" ||
    die "load failed, see $WORK/logs/load-$stored.err"
  rm -f "$WORK/data/load.csv"
  loaded=$stored
  psql_q cost "VACUUM ANALYZE" >/dev/null
  psql_q cost "CHECKPOINT" >/dev/null
  log "stored: $(psql_q cost "SELECT count(*) FROM transaction_state") transactions, $(psql_q cost "SELECT count(*) FROM tidemark_change") changes; load $(cut -d' ' -f1-3 /proc/loadavg)"
  # After the first size, only batch DEST_BATCH with one destination, unless FULL=1: how
  # the commit grows with the table is that one figure, and each measurement vacuums.
  if [[ "$stored" != "${SIZES%% *}" && "${FULL:-0}" != 1 ]]; then
    log "measuring $stored stored, batch $DEST_BATCH, 1 destination (load $(cut -d' ' -f1-3 /proc/loadavg))"
    measure "$stored" "$DEST_BATCH" 1
    continue
  fi
  for b in $BATCHES; do
    log "measuring $stored stored, batch $b, 1 destination (load $(cut -d' ' -f1-3 /proc/loadavg))"
    measure "$stored" "$b" 1
  done
  for d in $DESTINATIONS; do
    [[ "$d" == 1 && " $BATCHES " == *" $DEST_BATCH "* ]] && continue
    log "measuring $stored stored, batch $DEST_BATCH, $d destinations (load $(cut -d' ' -f1-3 /proc/loadavg))"
    measure "$stored" "$DEST_BATCH" "$d"
  done
done
log "results: $results (load $(cut -d' ' -f1-3 /proc/loadavg))"
python3 "$here/cost_model.py" "$results"
