#!/usr/bin/env bash
# The load's rows/s with retention deleting beside it, as a ratio to its rows/s without it
# (docs/retention.md). A template database holds HISTORY rows past every
# window (delivered changes of the log, runs with their ledger rows, released quarantine entries);
# each round clones it twice and times `tidemark run` loading ROWS new records into each:
# once alone, once while `tidemark retention run` deletes that history in its 5,000-row chunks
# (the two orders alternate per round). Usage:
#
#   bench/retention_bench.sh                          # 200,000 rows loaded beside 1,000,000 rows of history, 3 rounds
#   ROWS=50000 HISTORY=200000 ROUNDS=1 bench/retention_bench.sh   # a quick look
#
# ROWS (200000)      records the load writes (one change each, for an http destination, no relay)
# HISTORY (1000000)  changes past retention.outbox, on 1,000 keys of their own whose cursors are
#                    past them (delivered); plus HISTORY/10 ledger rows over
#                    HISTORY/100 runs past retention.runs and HISTORY/10 released quarantine entries
# ROUNDS (3)         per round: the load alone and the load beside retention
# TIDEMARK (build-bench/tidemark), WORK (/tmp/tidemark-retention-bench), PGBIN (/usr/lib/postgresql/15/bin)
#
# A round's ratio counts only when retention was still deleting when the load ended
# (`overlap` yes); otherwise raise HISTORY.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
ROWS="${ROWS:-200000}"
HISTORY="${HISTORY:-1000000}"
ROUNDS="${ROUNDS:-3}"
TIDEMARK="${TIDEMARK:-$repo/build-bench/tidemark}"
WORK="${WORK:-/tmp/tidemark-retention-bench}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
source "$here/bench_lib.sh"

[[ -x "$TIDEMARK" ]] || die "$TIDEMARK not found: build it with cmake -S $repo -B $repo/build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C $repo/build-bench tidemark"
mkdir -p "$WORK/data"
start_cluster

export BENCH_HOOK_SECRET=whsec_YmVuY2htYXJrLXNlY3JldA==
config="$WORK/retention.yaml"
cat >"$config" <<EOF
pipelines:
  bench:
    source: {kind: file, path: $WORK/data, format: csv}
    batch_size: 10000
    destinations:
      - {name: hooks, kind: http, url: http://127.0.0.1:9/events, secret_env: BENCH_HOOK_SECRET}
EOF

csv="$WORK/data/load-$ROWS.csv"
if [[ ! -s "$csv" ]]; then
  awk -v n="$ROWS" 'BEGIN {
    print "transaction_id,source_revision,amount,account_id,occurred_at"
    for (i = 0; i < n; i++) printf "T%09d,1,%d.%02d,A%07d,2024-05-01T00:00:00Z\n", i, 1 + i % 5000, i % 100, i % 10000
  }' >"$csv.tmp"
  mv "$csv.tmp" "$csv"
fi

# The history every window has passed, written by SQL (what the loads and a relay would have
# left): the changes on keys the load does not write, so its own start at key_sequence 1.
template="retention_history_$HISTORY"
log "filling $template"
psql_q postgres "DROP DATABASE IF EXISTS $template" >/dev/null 2>&1
psql_q postgres "CREATE DATABASE $template" >/dev/null
"$TIDEMARK" migrate --database "$base_url/$template" >"$WORK/logs/migrate.log" 2>&1 || die "migrate failed, see $WORK/logs/migrate.log"
psql_q "$template" "
  SELECT tidemark_register_destinations('{hooks}');
  INSERT INTO tidemark_change (partition_key, key_sequence, event_key, destinations, payload, created_at)
  SELECT 'old-' || (i - 1) % 1000, (i - 1) / 1000 + 1, 'old-' || i || ':1', '{hooks}',
         '{\"transaction_id\": \"x\", \"amount\": \"1.00\"}', now() - interval '10 days'
    FROM generate_series(1, $HISTORY) i;
  INSERT INTO tidemark_partition_sequence (partition_key, last_sequence)
  SELECT partition_key, max(key_sequence) FROM tidemark_change GROUP BY partition_key;
  INSERT INTO tidemark_cursor (destination, partition_key, through, last_sequence, advanced_at)
  SELECT 'hooks', partition_key, last_sequence, last_sequence, now() - interval '9 days' FROM tidemark_partition_sequence;
  INSERT INTO runs (pipeline, trigger, mode, status, requested_at, started_at, finished_at)
  SELECT 'bench', 'cli', 'resume', 'succeeded', now() - interval '100 days', now() - interval '100 days',
         now() - interval '100 days' FROM generate_series(1, GREATEST($HISTORY / 100, 1));
  INSERT INTO batch_ledger (pipeline, run_id, batch_no, source, start_position, end_position, input, inserted,
                            updated, unchanged, stale, superseded, duplicate, invalid, conflict, committed_at)
  SELECT 'bench', r.id, b, 's', '0', '1', 10, 10, 0, 0, 0, 0, 0, 0, 0, now() - interval '100 days'
    FROM runs r, generate_series(1, 10) b;
  INSERT INTO quarantine (pipeline, source, reason, detail, raw, format, position, created_at, released_at)
  SELECT 'bench', 's', 'invalid', 'd', 'raw ' || i, 'csv', i::text, now() - interval '40 days', now() - interval '35 days'
    FROM generate_series(1, GREATEST($HISTORY / 10, 1)) i;" >/dev/null
psql_q "$template" "VACUUM ANALYZE" >/dev/null

load() {  # database -> seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$TIDEMARK" run --pipeline bench --config "$config" --database "$base_url/$1" --source "$csv" \
    >"$WORK/logs/run.log" 2>&1 || die "the load failed, see $WORK/logs/run.log"
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}

fresh() {  # name
  psql_q postgres "DROP DATABASE IF EXISTS $1" >/dev/null 2>&1
  psql_q postgres "CREATE DATABASE $1 TEMPLATE $template" >/dev/null
  psql_q postgres "CHECKPOINT" >/dev/null
}

alone() {
  fresh retention_alone
  load retention_alone
}

beside() {  # -> "seconds overlap deleted_outbox"
  fresh retention_beside
  "$TIDEMARK" retention run --config "$config" --database "$base_url/retention_beside" \
    >"$WORK/logs/retention.out" 2>"$WORK/logs/retention.log" &
  local pid=$! seconds overlap=no
  seconds="$(load retention_beside)"
  kill -0 "$pid" 2>/dev/null && overlap=yes
  wait "$pid" || die "retention run failed, see $WORK/logs/retention.log"
  echo "$seconds $overlap $(awk '$1 == "outbox" { print $2 }' "$WORK/logs/retention.out")"
}

results="$WORK/logs/retention-$(date +%Y%m%d-%H%M%S).tsv"
printf 'round\trows\thistory\talone_s\talone_rows_per_s\tbeside_s\tbeside_rows_per_s\tratio\toverlap\toutbox_deleted\tload\n' >"$results"
log "cpus $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg); results in $results"
printf '%-5s %9s %9s %9s %10s %9s %10s %6s %7s\n' round rows history alone_s alone_r/s beside_s beside_r/s ratio overlap
for round in $(seq "$ROUNDS"); do
  if ((round % 2)); then
    a="$(alone)"; read -r b overlap deleted < <(beside)
  else
    read -r b overlap deleted < <(beside); a="$(alone)"
  fi
  read -r ar br ratio < <(python3 -c "print(f'{$ROWS / $a:.0f} {$ROWS / $b:.0f} {$a / $b:.3f}')")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$ROWS" "$HISTORY" "$a" "$ar" "$b" "$br" "$ratio" \
    "$overlap" "$deleted" "$(cut -d' ' -f1 /proc/loadavg)" >>"$results"
  printf '%-5s %9s %9s %9s %10s %9s %10s %6s %7s\n' "$round" "$ROWS" "$HISTORY" "$a" "$ar" "$b" "$br" "$ratio" "$overlap"
done
log "load $(cut -d' ' -f1-3 /proc/loadavg)"
