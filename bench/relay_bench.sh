#!/usr/bin/env bash
# Outbox relay throughput against a fair wire ceiling: the receiver is a plain
# Node.js server in its own process (bench/receiver.js, 200 at once); its ceiling is
# measured by wrk with the relay's connection count, body and signing headers; then
# `tidemark relay --once` (max_in_flight CONNECTIONS, signing on) delivers PENDING events
# from a fresh copy of a filled outbox to it. See docs/performance.md. Usage:
#
#   bench/relay_bench.sh                                   # 10,000 pending events, 3 rounds
#   PENDING="10000 100000 1000000" ROUNDS=1 bench/relay_bench.sh   # the backlog sweep
#   TIDEMARKS="old/tidemark build-bench/tidemark" bench/relay_bench.sh   # A/B, alternating per round
#
# PENDING (10000)        backlog sizes; each is filled once per binary by its `tidemark run` on
#                        the same generated input (PENDING new keys over ACCOUNTS accounts,
#                        so every event is one outbox row) into a template database at that
#                        binary's schema, cloned for every relay run of that binary
# ACCOUNTS (PENDING/10)  partition keys the events are spread over (few keys: long runs per key)
# ROUNDS (3)             per backlog: ROUNDS × (wrk ceiling, then each binary's relay run)
# CONNECTIONS (64)       wrk connections = the relay's max_in_flight
# WRK_SECONDS (5)        length of each wrk run
# TIDEMARKS (build-bench/tidemark)  the binaries to measure
# WORK (/tmp/tidemark-relay-bench), PGBIN (/usr/lib/postgresql/15/bin)
#
# pg_us/event is PostgreSQL's execution time per delivered event (pg_stat_statements, top-level
# statements of the relay's database, reset before each relay run): the database's cost of a
# delivery, which the wall-clock rate hides when the receiver or the relay's process is the
# bottleneck. Its statements, by total time, are in $WORK/logs/statements-<pending>-<round>-<binary>.tsv.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
PENDING="${PENDING:-10000}"
ROUNDS="${ROUNDS:-3}"
CONNECTIONS="${CONNECTIONS:-64}"
WRK_SECONDS="${WRK_SECONDS:-5}"
TIDEMARKS="${TIDEMARKS:-$repo/build-bench/tidemark}"
WORK="${WORK:-/tmp/tidemark-relay-bench}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
source "$here/bench_lib.sh"

require_tool wrk "apt-get install -y wrk"
require_tool node "apt-get install -y nodejs"
read -r -a binaries <<<"$TIDEMARKS"
for binary in "${binaries[@]}"; do
  [[ -x "$binary" ]] || die "$binary not found: build it with cmake -S $repo -B $repo/build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C $repo/build-bench tidemark"
done
mkdir -p "$WORK/data"
start_cluster "-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=top"
psql_q postgres "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
start_receiver

export BENCH_LEDGER_SECRET=whsec_YmVuY2htYXJrLXNlY3JldA==
config="$WORK/relay.yaml"
cat >"$config" <<EOF
pipelines:
  bench:
    source: {kind: file, path: $WORK/data, format: csv}
    batch_size: 10000
    destinations:
      - {name: ledger, kind: http, url: $receiver_url/events, secret_env: BENCH_LEDGER_SECRET}
relay:
  max_in_flight: $CONNECTIONS
EOF

# One template database per backlog and binary, filled through the real write path: binaries
# of an A/B may differ in schema (a migration), and a binary runs only on its own.
fill() {  # pending binary_index -> template name
  local pending="$1" binary="${binaries[$2]}" template="relay_fill_$1_$2"
  local accounts="${ACCOUNTS:-$(( pending / 10 > 0 ? pending / 10 : 1 ))}"
  local csv="$WORK/data/relay-$1-$accounts.csv"
  if [[ ! -s "$csv" ]]; then
    awk -v n="$pending" -v accounts="$accounts" 'BEGIN {
      print "transaction_id,source_revision,amount,account_id,occurred_at"
      for (i = 0; i < n; i++) printf "T%09d,1,%d.%02d,A%07d,2024-05-01T00:00:00Z\n", i, 1 + i % 5000, i % 100, i % accounts
    }' >"$csv.tmp"
    mv "$csv.tmp" "$csv"
  fi
  psql_q postgres "DROP DATABASE IF EXISTS $template" >/dev/null 2>&1
  psql_q postgres "CREATE DATABASE $template" >/dev/null
  "$binary" migrate --database "$base_url/$template" >"$WORK/logs/fill-$pending.log" 2>&1 &&
    "$binary" run --pipeline bench --config "$config" --database "$base_url/$template" --source "$csv" \
    >>"$WORK/logs/fill-$pending.log" 2>&1 || die "filling $pending events failed, see $WORK/logs/fill-$pending.log"
  psql_q "$template" "VACUUM ANALYZE" >/dev/null
  psql_q postgres "CHECKPOINT" >/dev/null
  local count
  count="$(psql_q "$template" "SELECT count(*) FROM outbox WHERE status = 'pending'")"
  [[ "$count" == "$pending" ]] || die "the template of $pending holds $count pending events"
  echo "$template"
}

# wrk's request: the body and headers of a real event of the outbox, signed as the relay
# signs it (Standard Webhooks: HMAC-SHA256 over "id.timestamp.body").
wrk_request() {  # template
  local row
  row="$(psql_q "$1" "SELECT idempotency_key || E'\t' || payload::text FROM outbox ORDER BY id LIMIT 1")"
  export WRK_ID="${row%%$'\t'*}" WRK_BODY="${row#*$'\t'}" WRK_TIMESTAMP="$(date +%s)"
  WRK_SIGNATURE="$(python3 - <<'PY'
import base64, hashlib, hmac, os
key = base64.b64decode(os.environ["BENCH_LEDGER_SECRET"][len("whsec_"):])
content = ".".join(os.environ[name] for name in ("WRK_ID", "WRK_TIMESTAMP", "WRK_BODY")).encode()
print("v1," + base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode())
PY
)"
  export WRK_SIGNATURE
}

ceiling() {  # -> requests/s
  curl -s "$receiver_url/stats" >/dev/null
  wrk -t2 -c"$CONNECTIONS" -d"${WRK_SECONDS}s" -s "$here/wrk_post.lua" "$receiver_url/events" >"$WORK/logs/wrk.log" 2>&1 ||
    die "wrk failed, see $WORK/logs/wrk.log"
  awk '/^Requests\/sec:/ { printf "%.0f", $2 }' "$WORK/logs/wrk.log"
}

results="$WORK/logs/relay-$(date +%Y%m%d-%H%M%S).tsv"
printf 'pending\tround\tbinary\twrk_req_per_s\tseconds\tevents_per_s\tshare\treceiver_events_per_s\tpg_us_per_event\tload\n' >"$results"
log "cpus $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg); results in $results"
printf '%-9s %-5s %-34s %10s %9s %10s %6s %10s %12s\n' pending round binary wrk_req/s seconds events/s share recv_ev/s pg_us/event
for pending in $PENDING; do
  log "filling $pending pending events"
  templates=()
  for index in "${!binaries[@]}"; do templates+=("$(fill "$pending" "$index")"); done
  wrk_request "${templates[0]}"
  for round in $(seq "$ROUNDS"); do
    wire="$(ceiling)"
    for index in "${!binaries[@]}"; do
      binary="${binaries[$index]}" template="${templates[$index]}"
      db="relay_run"
      psql_q postgres "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
      psql_q postgres "CREATE DATABASE $db TEMPLATE $template" >/dev/null
      psql_q postgres "CHECKPOINT" >/dev/null
      curl -s "$receiver_url/stats" >/dev/null
      psql_q postgres "SELECT pg_stat_statements_reset()" >/dev/null
      t0=$(date +%s.%N)
      "$binary" relay --once --config "$config" --database "$base_url/$db" >"$WORK/logs/relay.log" 2>&1 ||
        die "relay --once failed, see $WORK/logs/relay.log"
      t1=$(date +%s.%N)
      # Read before the count below, which is the bench's statement, not the relay's.
      statements="$WORK/logs/statements-$pending-$round-$index.tsv"
      psql_q postgres "SELECT round(total_exec_time::numeric, 1) || E'\t' || calls || E'\t' || left(regexp_replace(query, '\s+', ' ', 'g'), 160)
                         FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$db')
                        ORDER BY total_exec_time DESC" >"$statements"
      pg_ms="$(awk -F'\t' '{ total += $1 } END { printf "%.1f", total }' "$statements")"
      delivered="$(psql_q "$db" "SELECT count(*) FROM outbox WHERE status = 'delivered'")"
      [[ "$delivered" == "$pending" ]] || die "$binary delivered $delivered of $pending events, see $WORK/logs/relay.log"
      pg_us="$(awk -v ms="$pg_ms" -v n="$pending" 'BEGIN { printf "%.1f", ms * 1000 / n }')"
      read -r seconds rate share recv_rate < <(curl -s "$receiver_url/stats" | python3 -c "
import json, sys
s = json.load(sys.stdin)
seconds = $t1 - $t0
span = (s['last_us'] - s['first_us']) / 1e6
print(f'{seconds:.2f} {$pending / seconds:.0f} {$pending / seconds / $wire:.2f} {(s[\"received\"] - 1) / span if span > 0 else 0:.0f}')")
      load="$(cut -d' ' -f1 /proc/loadavg)"
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$pending" "$round" "$binary" "$wire" "$seconds" "$rate" "$share" "$recv_rate" "$pg_us" "$load" >>"$results"
      label="$binary"
      (( ${#label} > 34 )) && label="${label: -34}"  # (a shorter one would print empty)
      printf '%-9s %-5s %-34s %10s %9s %10s %6s %10s %12s\n' "$pending" "$round" "$label" "$wire" "$seconds" "$rate" "$share" "$recv_rate" "$pg_us"
    done
  done
done
log "load $(cut -d' ' -f1-3 /proc/loadavg)"
