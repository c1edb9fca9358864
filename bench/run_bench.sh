#!/usr/bin/env bash
# Tidemark throughput benchmark: the hand-written psql baseline (B) against
# `tidemark run` (P), each on a fresh database cloned from one migrated template, in the
# order B P P B, then a sweep of batch sizes and, optionally, peak RSS on a large input.
# With ENTITY=1 it instead loads a declared 12-field entity (E) beside the built-in
# transaction entity (T), both with `tidemark run`, in the order T E E T (no psql baseline).
# See docs/performance.md. Usage (from anywhere; env variables override the defaults):
#
#   bench/run_bench.sh                                  # quick: 200k rows, batch 10k
#   ROWS=1000000 RSS_ROWS=10000000 bench/run_bench.sh   # the documented full run
#   ENTITY=1 bench/run_bench.sh                         # declared entity beside the built-in
#
# ROWS (200000)        rows of the main dataset
# BATCH (10000)        batch size of the B P P B runs
# SEED (42)            dataset seed (same seed, same rows)
# CONFLICTS (0)        per 100 stale rows, how many become same-revision conflicts
# SWEEP ("1000 10000 50000")  batch sizes of the sweep (one B and one P each); "" skips it
# REPLAY (1)           after each P, time `tidemark run --replay` of the same rows
# RSS_ROWS (0)         when > 0, also run P once on this many rows (batch BATCH) for peak RSS
# RUN_TIMEOUT (1800)   seconds allowed to any single timed run
# ENTITY (0)           1: the entity mode, T E E T at BATCH on ROWS rows (SWEEP and REPLAY
#                      do not apply; RSS_ROWS > 0 adds one E on that many rows)
# ENTITY_FORMAT (csv)  the entity dataset's format: csv or jsonl
# ENTITY_ROUNDS (1)    how many times the entity mode repeats T E E T
# WORK (/tmp/tidemark-bench)  cluster, datasets and logs
# TIDEMARK (build-bench/tidemark)  the binary (build: cmake -B build-bench -DCMAKE_BUILD_TYPE=Release
#                      && ninja -C build-bench tidemark)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
ROWS="${ROWS:-200000}"
BATCH="${BATCH:-10000}"
SEED="${SEED:-42}"
CONFLICTS="${CONFLICTS:-0}"
SWEEP="${SWEEP-1000 10000 50000}"
REPLAY="${REPLAY:-1}"
RSS_ROWS="${RSS_ROWS:-0}"
RUN_TIMEOUT="${RUN_TIMEOUT:-1800}"
ENTITY="${ENTITY:-0}"
ENTITY_FORMAT="${ENTITY_FORMAT:-csv}"
ENTITY_ROUNDS="${ENTITY_ROUNDS:-1}"
WORK="${WORK:-/tmp/tidemark-bench}"
TIDEMARK="${TIDEMARK:-$repo/build-bench/tidemark}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
PIPELINE=bench
ENTITY_PIPELINE=bench_entity
ENTITY_TABLE=orders  # the table of the declared entity `orders` (its name)

# shellcheck source=bench/bench_lib.sh
source "$here/bench_lib.sh"

[[ -x "$TIDEMARK" ]] || die "$TIDEMARK not found: build it with cmake -S $repo -B $repo/build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C $repo/build-bench tidemark"
[[ "$ENTITY_FORMAT" == csv || "$ENTITY_FORMAT" == jsonl ]] || die "ENTITY_FORMAT must be csv or jsonl"
[[ -x "$PGBIN/initdb" ]] || die "PostgreSQL 15 server binaries not found in $PGBIN (set PGBIN)"

mkdir -p "$WORK/data" "$WORK/logs"
chmod 755 "$WORK"
stamp="$(date +%Y%m%d-%H%M%S)"
results="$WORK/logs/results-$stamp.tsv"
printf 'kind\tbatch\trows\tseconds\trows_per_s\tpeak_rss_kib\tcpu_s\tfingerprint\tinput_bytes\tmb_per_s\n' >"$results"


# --- PostgreSQL: a private cluster, loopback only, fsync on, the same for B and P --------
start_cluster

# --- datasets (generated once per rows/seed/conflicts, outside the timing) ----------------
dataset() {  # rows [orders] -> path of the built-in entity's CSV, or of the declared entity's file
  local rows="$1" file="$WORK/data/rows-$1-seed-$SEED-c$CONFLICTS.csv" args=()
  if [[ "${2:-}" == orders ]]; then
    file="$WORK/data/orders-$1-seed-$SEED-c$CONFLICTS.$ENTITY_FORMAT"
    args=(--entity orders --format "$ENTITY_FORMAT")
  fi
  if [[ ! -s "$file" ]]; then
    log "generating $rows rows (seed $SEED${2:+, entity $2}) into $file"
    python3 "$here/generate.py" --rows "$rows" --seed "$SEED" --conflicts "$CONFLICTS" "${args[@]}" --output "$file.tmp"
    mv "$file.tmp" "$file"
  fi
  echo "$file"
}

# The baseline's psql script for one dataset and batch size: per batch a \copy of that
# batch's file into the session's staging table and bench/baseline.sql, in one transaction.
baseline_script() {  # csv batch -> path of the script
  local csv="$1" batch="$2" dir="${1%.csv}-batches-$2"
  local script="$dir/baseline.psql"
  if [[ ! -s "$script" ]]; then
    rm -rf "$dir" && mkdir -p "$dir"
    tail -n +2 "$csv" | split -l "$batch" -d -a 6 --additional-suffix=.csv - "$dir/batch_"
    local header offset size k=0 start
    header="$(head -1 "$csv")"
    offset=$(( ${#header} + 1 ))
    {
      echo '\set ON_ERROR_STOP on'
      echo "\\set pipeline $PIPELINE"
      echo "\\set source '$csv'"
      echo "\\set csv_header '$header'"
      echo 'CREATE TEMP TABLE bench_stage (ord bigint GENERATED ALWAYS AS IDENTITY, transaction_id text NOT NULL,'
      echo '  source_revision bigint NOT NULL, amount numeric(12,2) NOT NULL, account_id text, occurred_at timestamptz)'
      echo '  ON COMMIT DELETE ROWS;'
      echo "SELECT pg_advisory_lock(hashtext('$PIPELINE'));"
      echo "INSERT INTO runs (pipeline, trigger, mode, status, started_at) VALUES (:'pipeline', 'cli', 'resume', 'running', now()) RETURNING id AS run_id \\gset"
      for part in "$dir"/batch_*.csv; do
        k=$((k + 1))
        size=$(stat -c %s "$part")
        start="$(basename "$csv"):$offset"
        offset=$((offset + size))
        echo "\\set batch_no $k"
        echo "\\set start_position '$start'"
        echo "\\set end_position '$(basename "$csv"):$offset'"
        echo "\\set end_file '$(basename "$csv")'"
        echo "\\set end_offset $offset"
        echo 'BEGIN;'
        echo "\\copy bench_stage (transaction_id, source_revision, amount, account_id, occurred_at) FROM '$part' WITH (FORMAT csv)"
        echo "\\i $here/baseline.sql"
        echo 'COMMIT;'
      done
      echo "UPDATE runs SET status = 'succeeded', finished_at = now() WHERE id = :run_id;"
    } >"$script.tmp"
    mv "$script.tmp" "$script"
  fi
  echo "$script"
}

# What both B and P must leave behind (the events as the outbox view derives them from the log, and
# the per-key counters); equal fingerprints mean equal effects. With a table
# (the declared entity's), its rows without the time they were written stand for the state.
fingerprint() {  # database [entity table]
  local state="SELECT count(*) || '/' || COALESCE(sum(hashtext(transaction_id || ':' || source_revision || ':' || amount
                || ':' || COALESCE(account_id, '') || ':' || COALESCE(occurred_at::text, ''))::bigint), 0) FROM transaction_state"
  [[ -n "${2:-}" ]] &&
    state="SELECT count(*) || '/' || COALESCE(sum(hashtext((to_jsonb(t) - 'tidemark_updated_at')::text)::bigint), 0) FROM $2 t"
  psql_q "$1" "SELECT concat_ws(' ',
      'state', ($state),
      'outbox', (SELECT count(*) || '/' || COALESCE(sum(hashtext(idempotency_key || ':' || partition_key || ':' || sequence
                || ':' || payload::text)::bigint), 0) FROM outbox),
      'quarantine', (SELECT count(*) || '/' || COALESCE(sum(hashtext(transaction_id || ':' || source_revision)::bigint), 0) FROM quarantine),
      'sequences', (SELECT COALESCE(sum(last_sequence), 0) || '/' || count(*) FROM tidemark_partition_sequence),
      'ledger', (SELECT concat_ws(',', sum(input), sum(inserted), sum(updated), sum(unchanged), sum(stale),
                sum(superseded), sum(duplicate), sum(invalid), sum(conflict)) FROM batch_ledger))"
}

run_seq=0
fresh_db() {  # sets db to a new database cloned from the template
  run_seq=$((run_seq + 1))
  db="bench_${stamp//-/_}_$run_seq"
  # Flush the previous run's dirty pages now, not during the next timed run.
  psql_q postgres "CHECKPOINT" >/dev/null
  psql_q postgres "CREATE DATABASE $db TEMPLATE bench_template" >/dev/null
}
drop_db() { psql_q postgres "DROP DATABASE IF EXISTS $1" >/dev/null; }

now() { date +%s.%N; }
record() {  # kind batch rows seconds rss cpu fingerprint input-file
  local rate bytes mbps
  rate=$(python3 -c "print(round($3 / $4))")
  bytes=$(stat -c %s "$8")
  mbps=$(python3 -c "print(f'{$bytes / 1e6 / $4:.2f}')")  # MB = 10^6 bytes of input
  printf '%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$rate" "$5" "$6" "$7" "$bytes" "$mbps" >>"$results"
  log "$1 batch $2: $3 rows in $(printf %.2f "$4") s = $rate rows/s, $mbps MB/s${5:+, peak RSS $5 KiB, tidemark CPU $6 s}"
}

config="$WORK/bench.yaml"
cat >"$config" <<EOF
pipelines:
  $PIPELINE:
    source: {kind: file, path: $WORK/data, format: csv}
    batch_size: 10000
    destinations:
      - {name: ledger, kind: http, url: http://127.0.0.1:9/events, secret_env: BENCH_LEDGER_SECRET}
EOF
migrate_config=()
if [[ "$ENTITY" == 1 ]]; then
  # The declared entity of generate.py --entity orders: 12 fields of every type, decimals of
  # three precisions/scales, partitioned by a text field. Only in this mode, so that the
  # B P P B flow also runs binaries that predate entities.
  cat >>"$config" <<EOF
  $ENTITY_PIPELINE:
    entity: orders
    source: {kind: file, path: $WORK/data, format: $ENTITY_FORMAT}
    batch_size: 10000
    destinations:  # destination names are unique across a file
      - {name: orders_ledger, kind: http, url: http://127.0.0.1:9/events, secret_env: BENCH_LEDGER_SECRET}
entities:
  orders:
    key: order_id
    revision: version
    partition_by: customer_id
    fields:
      customer_id: {type: text, required: true, max_length: 32}
      status:      {type: text, required: true, max_length: 16}
      quantity:    {type: integer, required: true}
      points:      {type: integer}
      amount:      {type: decimal, precision: 14, scale: 4, required: true}
      unit_price:  {type: decimal, precision: 10, scale: 2}
      tax_rate:    {type: decimal, precision: 5, scale: 4}
      placed_at:   {type: timestamp, required: true}
      updated_at:  {type: timestamp}
      ship_date:   {type: date}
      paid:        {type: boolean}
      meta:        {type: json}
EOF
  migrate_config=(--config "$config")  # the template holds the entity's table too
fi
export BENCH_LEDGER_SECRET=whsec_YmVuY2htYXJrLXNlY3JldA==

log "template database (tidemark migrate)"
psql_q postgres "DROP DATABASE IF EXISTS bench_template" >/dev/null
psql_q postgres "CREATE DATABASE bench_template" >/dev/null
"$TIDEMARK" migrate --database "$base_url/bench_template" "${migrate_config[@]}" >"$WORK/logs/migrate.log" 2>&1 ||
  die "tidemark migrate failed, see $WORK/logs/migrate.log"

run_b() {  # csv batch rows [keep]
  local script t0 t1 fp
  script="$(baseline_script "$1" "$2")"
  fresh_db
  t0=$(now)
  timeout "$RUN_TIMEOUT" psql -X -q -A -t -d "$base_url/$db" -f "$script" >"$WORK/logs/$db-B.out" 2>"$WORK/logs/$db-B.err" ||
    die "baseline run failed, see $WORK/logs/$db-B.err"
  t1=$(now)
  fp="$(fingerprint "$db")"
  record B "$2" "$3" "$(python3 -c "print($t1 - $t0)")" "" "" "$fp" "$1"
  drop_db "$db"
}

run_tidemark() {  # kind db csv batch rows [--replay]; kind E loads the declared entity
  local kind="$1" db="$2" csv="$3" batch="$4" rows="$5" t0 t1 rss cpu fp pipeline="$PIPELINE" table=""
  shift 5
  [[ "$kind" == E ]] && pipeline="$ENTITY_PIPELINE" table="$ENTITY_TABLE"
  t0=$(now)
  timeout "$RUN_TIMEOUT" /usr/bin/time -v -o "$WORK/logs/$db-$kind.time" \
    "$TIDEMARK" run --pipeline "$pipeline" --config "$config" --database "$base_url/$db" --source "$csv" \
    --batch-size "$batch" --json "$@" >"$WORK/logs/$db-$kind.out" 2>"$WORK/logs/$db-$kind.err" ||
    die "tidemark run failed, see $WORK/logs/$db-$kind.err"
  t1=$(now)
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$WORK/logs/$db-$kind.time")
  cpu=$(awk -F': ' '/User time|System time/ {sum += $2} END {print sum}' "$WORK/logs/$db-$kind.time")
  fp="$(fingerprint "$db" "$table")"
  record "$kind" "$batch" "$rows" "$(python3 -c "print($t1 - $t0)")" "$rss" "$cpu" "$fp" "$csv"
}

run_p() {  # csv batch rows [kind: P, or T / E in the entity mode]
  local kind="${4:-P}"
  fresh_db
  run_tidemark "$kind" "$db" "$1" "$2" "$3"
  if [[ "$REPLAY" == 1 && "$kind" == P ]]; then
    psql_q postgres "CHECKPOINT" >/dev/null
    run_tidemark R "$db" "$1" "$2" "$3" --replay
  fi
  drop_db "$db"
}

csv="$(dataset "$ROWS")"

if [[ "$ENTITY" == 1 ]]; then
  entity_file="$(dataset "$ROWS" orders)"
  for ((round = 1; round <= ENTITY_ROUNDS; round++)); do
    log "T E E T at batch $BATCH on $ROWS rows (round $round of $ENTITY_ROUNDS)"
    run_p "$csv" "$BATCH" "$ROWS" T
    run_p "$entity_file" "$BATCH" "$ROWS" E
    run_p "$entity_file" "$BATCH" "$ROWS" E
    run_p "$csv" "$BATCH" "$ROWS" T
  done
  if (( RSS_ROWS > 0 )); then
    log "peak RSS: E on $RSS_ROWS rows at batch $BATCH"
    run_p "$(dataset "$RSS_ROWS" orders)" "$BATCH" "$RSS_ROWS" E
  fi
  log "results: $results"
  # exit 1 (set -e) when runs disagree, or peak RSS reaches 64 MiB at the default batch size
  python3 "$here/summarize.py" "$results" "$BATCH"
  exit 0
fi

log "dataset $csv; baseline scripts"
baseline_script "$csv" "$BATCH" >/dev/null
for b in $SWEEP; do baseline_script "$csv" "$b" >/dev/null; done

log "B P P B at batch $BATCH on $ROWS rows"
run_b "$csv" "$BATCH" "$ROWS"
run_p "$csv" "$BATCH" "$ROWS"
run_p "$csv" "$BATCH" "$ROWS"
run_b "$csv" "$BATCH" "$ROWS"

for b in $SWEEP; do
  [[ "$b" == "$BATCH" ]] && continue  # measured above
  log "sweep: batch $b"
  REPLAY=0 run_p "$csv" "$b" "$ROWS"
  run_b "$csv" "$b" "$ROWS"
done

if (( RSS_ROWS > 0 )); then
  big="$(dataset "$RSS_ROWS")"
  log "peak RSS: P on $RSS_ROWS rows at batch $BATCH"
  REPLAY=0 run_p "$big" "$BATCH" "$RSS_ROWS"
fi

python3 "$here/summarize.py" "$results" "$BATCH"
log "results: $results"
