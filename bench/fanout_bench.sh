#!/usr/bin/env bash
# What each destination costs the load path: `tidemark run` of the same rows into pipelines
# that differ only in their number of destinations, each run on a fresh database cloned from
# one migrated template, the counts alternated (1 2 5 5 2 1 by default). Per run: rows/s,
# effect rows written per record (change-log rows; outbox rows on a build from before the change
# log, which wrote one per destination) and WAL bytes per record. No relay runs: this is the write
# path alone. See docs/performance.md "Destinations and the load path".
#
#   bench/fanout_bench.sh                     # 200k rows, 1 2 5 destinations, one round
#   COUNTS="1 2 3" ROUNDS=2 bench/fanout_bench.sh
#
# A pipeline with N destinations has the webhook `hook1`, then the views account_balance and
# daily_totals (N >= 2, N >= 3), then more webhooks up to N: so 2 is one webhook and one
# view, 3 is one webhook and both views, 5 is three webhooks and both views.
#
# ROWS (200000)     rows of the dataset (bench/generate.py, the built-in transaction entity)
# BATCH (10000)     batch size
# SEED (42)         dataset seed
# COUNTS ("1 2 5")  the destination counts, run in this order and then in reverse
# ROUNDS (1)        how many times the palindrome repeats
# RUN_TIMEOUT (1800) seconds allowed to one run
# WORK (/tmp/tidemark-fanout)  cluster, dataset and logs
# TIDEMARK (build-bench/tidemark)  the binary (a Release build: see bench/run_bench.sh)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
ROWS="${ROWS:-200000}"
BATCH="${BATCH:-10000}"
SEED="${SEED:-42}"
COUNTS="${COUNTS:-1 2 5}"
ROUNDS="${ROUNDS:-1}"
RUN_TIMEOUT="${RUN_TIMEOUT:-1800}"
WORK="${WORK:-/tmp/tidemark-fanout}"
TIDEMARK="${TIDEMARK:-$repo/build-bench/tidemark}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"

# shellcheck source=bench/bench_lib.sh
source "$here/bench_lib.sh"

[[ -x "$TIDEMARK" ]] || die "$TIDEMARK not found: build it with cmake -S $repo -B $repo/build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C $repo/build-bench tidemark"
for n in $COUNTS; do [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "COUNTS: '$n' is not a destination count of 1 or more"; done

mkdir -p "$WORK/data" "$WORK/logs"
start_cluster
stamp="$(date +%Y%m%d-%H%M%S)"
results="$WORK/logs/fanout-$stamp.tsv"
printf 'destinations\trows\tseconds\trows_per_s\teffect_rows_per_record\twal_bytes_per_record\n' >"$results"

csv="$(generated_csv "$ROWS")"

# One pipeline per count, fan<N>, its destinations as the header says.
config="$WORK/fanout.yaml"
{
  echo "pipelines:"
  for n in $(tr ' ' '\n' <<<"$COUNTS" | sort -un); do
    echo "  fan$n:"
    echo "    source: {kind: file, path: $WORK/data, format: csv}"
    echo "    destinations:"
    echo "      - {name: fan${n}_hook1, kind: http, url: http://127.0.0.1:9/events, secret_env: BENCH_SECRET}"
    (( n >= 2 )) && echo "      - {name: account_balance, kind: view}"
    (( n >= 3 )) && echo "      - {name: daily_totals, kind: view}"
    for ((k = 2; k <= n - 2; k++)); do
      echo "      - {name: fan${n}_hook$k, kind: http, url: http://127.0.0.1:9/events, secret_env: BENCH_SECRET}"
    done
  done
} >"$config"
export BENCH_SECRET=whsec_YmVuY2htYXJrLXNlY3JldA==

log "template database (tidemark migrate)"
psql_q postgres "DROP DATABASE IF EXISTS fanout_template" >/dev/null
psql_q postgres "CREATE DATABASE fanout_template" >/dev/null
"$TIDEMARK" migrate --database "$base_url/fanout_template" --config "$config" >"$WORK/logs/migrate.log" 2>&1 ||
  die "tidemark migrate failed, see $WORK/logs/migrate.log"

run_seq=0
run_fanout() {  # destination count
  local n="$1" db t0 t1 wal0 wal1 effects outbox seconds
  run_seq=$((run_seq + 1))
  db="fanout_${stamp//-/_}_$run_seq"
  psql_q postgres "CHECKPOINT" >/dev/null  # the previous run's dirty pages, not during this one
  psql_q postgres "CREATE DATABASE $db TEMPLATE fanout_template" >/dev/null
  wal0="$(psql_q postgres "SELECT pg_current_wal_lsn()")"
  t0=$(date +%s.%N)
  timeout "$RUN_TIMEOUT" "$TIDEMARK" run --pipeline "fan$n" --config "$config" --database "$base_url/$db" \
    --source "$csv" --batch-size "$BATCH" --json >"$WORK/logs/$db.out" 2>"$WORK/logs/$db.err" ||
    die "tidemark run failed, see $WORK/logs/$db.err"
  t1=$(date +%s.%N)
  wal1="$(psql_q postgres "SELECT pg_current_wal_lsn()")"
  effects=outbox
  [[ "$(psql_q "$db" "SELECT to_regclass('tidemark_change') IS NOT NULL")" == t ]] && effects=tidemark_change
  outbox="$(psql_q "$db" "SELECT count(*) FROM $effects")"
  seconds="$(python3 -c "print($t1 - $t0)")"
  python3 - "$n" "$ROWS" "$seconds" "$outbox" "$(psql_q postgres "SELECT pg_wal_lsn_diff('$wal1', '$wal0')")" >>"$results" <<'PY'
import sys
n, rows, seconds, outbox, wal = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
print(f"{n}\t{rows}\t{seconds:.2f}\t{rows / seconds:.0f}\t{outbox / rows:.2f}\t{wal / rows:.0f}")
PY
  log "$n destination(s): $(tail -1 "$results" | cut -f3-6 | tr '\t' ' ') (seconds rows/s effect rows/record WAL/record)"
  psql_q postgres "DROP DATABASE $db" >/dev/null
}

order="$COUNTS $(tr ' ' '\n' <<<"$COUNTS" | tac | tr '\n' ' ')"
for ((round = 1; round <= ROUNDS; round++)); do
  log "round $round of $ROUNDS: $order(load: $(cut -d' ' -f1-3 /proc/loadavg))"
  for n in $order; do run_fanout "$n"; done
done

python3 - "$results" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
counts = sorted({int(r["destinations"]) for r in rows})
median = lambda n, col: statistics.median(float(r[col]) for r in rows if int(r["destinations"]) == n)
base = median(counts[0], "rows_per_s")
print(f"{'destinations':>12} {'rows/s (median)':>16} {'vs ' + str(counts[0]):>8} {'effect rows/record':>19} {'WAL bytes/record':>17}")
for n in counts:
    rate = median(n, "rows_per_s")
    print(f"{n:>12} {rate:>16.0f} {rate / base:>8.2f} {median(n, 'effect_rows_per_record'):>19.2f} "
          f"{median(n, 'wal_bytes_per_record'):>17.0f}")
PY
log "results: $results"
