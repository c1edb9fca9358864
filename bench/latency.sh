#!/usr/bin/env bash
# End-to-end latency in `tidemark serve`: a file source appended with 100
# complete lines every 100 ms (a steady 1,000 events/s) and `schedule: {every: 100ms}`, for
# 60 s, delivered by serve's relay to bench/receiver.js, which records each arrival on this
# machine's clock. Latency = arrival - the event's outbox created_at (the start of the
# transaction that committed it, so at most the commit's own time more than commit ->
# delivered), and arrival - the time its line was appended. See docs/performance.md. Usage:
#
#   bench/latency.sh                                              # one run, build-bench/tidemark
#   RUNS="polling=old/tidemark notify=build-bench/tidemark" bench/latency.sh
#
# RUNS ("notify=build-bench/tidemark")  label=binary pairs, run one after the other; a
#                      binary from before LISTEN/NOTIFY (commit 92c5761) measures polling only
# DURATION (60)        seconds of load
# WORK (/tmp/tidemark-latency-bench), PGBIN (/usr/lib/postgresql/15/bin)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
RUNS="${RUNS:-notify=$repo/build-bench/tidemark}"
DURATION="${DURATION:-60}"
WORK="${WORK:-/tmp/tidemark-latency-bench}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
source "$here/bench_lib.sh"

require_tool node "apt-get install -y nodejs"
for run in $RUNS; do
  [[ -x "${run#*=}" ]] || die "${run#*=} not found: build it with cmake -S $repo -B $repo/build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C $repo/build-bench tidemark"
done
start_cluster
export BENCH_LEDGER_SECRET=whsec_YmVuY2htYXJrLXNlY3JldA==
log "cpus $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)"

for run in $RUNS; do
  label="${run%%=*}" binary="${run#*=}" dir="$WORK/$label"
  rm -rf "$dir" && mkdir -p "$dir"
  chmod 755 "$dir"
  start_receiver "$dir/arrivals.tsv"
  echo "transaction_id,source_revision,amount,account_id,occurred_at" >"$dir/in.csv"
  cat >"$dir/serve.yaml" <<EOF
pipelines:
  latency:
    source: {kind: file, path: $dir/in.csv, format: csv}
    schedule: {every: 100ms}
    destinations:
      - {name: hooks, kind: http, url: $receiver_url/events, secret_env: BENCH_LEDGER_SECRET}
relay:
  max_in_flight: 64
EOF
  db="latency_$label"
  psql_q postgres "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
  psql_q postgres "CREATE DATABASE $db" >/dev/null
  "$binary" migrate --database "$base_url/$db" >"$dir/migrate.log" 2>&1 || die "migrate failed, see $dir/migrate.log"
  "$binary" serve --config "$dir/serve.yaml" --database "$base_url/$db" --listen 127.0.0.1:0 >"$dir/serve.log" 2>&1 &
  serve_pid=$!
  cleanups+=("kill $serve_pid")
  sleep 2
  log "$label: $DURATION s of 1,000 events/s"
  python3 "$here/latency_feed.py" --file "$dir/in.csv" --log "$dir/feed.tsv" --duration "$DURATION"
  expected=$(( DURATION * 1000 ))
  for _ in $(seq 300); do
    delivered="$(psql_q "$db" "SELECT count(*) FROM outbox WHERE status = 'delivered'")"
    [[ "$delivered" == "$expected" ]] && break
    sleep 0.1
  done
  kill "$serve_pid" && wait "$serve_pid" || true
  kill "$receiver_pid" && wait "$receiver_pid" || true
  psql_q "$db" "SELECT idempotency_key || E'\t' || (extract(epoch FROM created_at) * 1000000)::bigint FROM outbox" \
    >"$dir/created.tsv"
  python3 "$here/latency_summary.py" "$label ($binary)" "$dir/arrivals.tsv" "$dir/created.tsv" "$dir/feed.tsv"
done
log "load $(cut -d' ' -f1-3 /proc/loadavg)"
