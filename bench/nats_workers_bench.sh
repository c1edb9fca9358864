#!/usr/bin/env bash
# A nats pipeline's rows/s with 1, 2 and 3 workers (docs/scale-out.md "Figures"),
# as ratios to one worker in the same script. ROWS order versions are published once over
# PARTITIONS partitions (streams ORDERS_<k> on one local nats-server, R1); each round loads
# them into a fresh database with W `tidemark serve` processes started at once, sharing the
# partitions through PostgreSQL (rebalance_interval 1s), timed from their start until the
# ledger holds every message. Usage:
#
#   bench/nats_workers_bench.sh                       # 240,000 rows over 6 partitions, W = 1 2 3, 2 rounds
#   ROWS=60000 ROUNDS=1 bench/nats_workers_bench.sh   # a quick look
#
# ROWS (240000), KEYS (ROWS/4), PARTITIONS (6), WORKERS ("1 2 3"), ROUNDS (2), BATCH (5000)
# BUILD (build-bench: tidemark and nats_publish), WORK (/tmp/tidemark-nats-bench),
# PGBIN (/usr/lib/postgresql/15/bin)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
ROWS="${ROWS:-240000}"
KEYS="${KEYS:-$((ROWS / 4))}"
PARTITIONS="${PARTITIONS:-6}"
WORKERS="${WORKERS:-1 2 3}"
ROUNDS="${ROUNDS:-2}"
BATCH="${BATCH:-5000}"
BUILD="${BUILD:-$repo/build-bench}"
WORK="${WORK:-/tmp/tidemark-nats-bench}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
source "$here/bench_lib.sh"

for binary in tidemark nats_publish; do
  [[ -x "$BUILD/$binary" ]] || die "$BUILD/$binary not found: build it with cmake -S $repo -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C $BUILD tidemark nats_publish"
done
require_tool nats-server "apt-get install nats-server"
rm -rf "$WORK/nats"
mkdir -p "$WORK/nats" "$WORK/logs"
start_cluster

nats_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
nats-server -a 127.0.0.1 -p "$nats_port" -js -sd "$WORK/nats" >"$WORK/logs/nats-server.log" 2>&1 &
cleanups+=("kill $!")
for _ in $(seq 100); do
  "$BUILD/nats_publish" "nats://127.0.0.1:$nats_port" PROBE 1 0 1 2>/dev/null && break
  sleep 0.1
done

config="$WORK/nats.yaml"
cat >"$config" <<YAML
entities:
  orders:
    key: order_id
    revision: version
    fields:
      amount: {type: decimal, precision: 14, scale: 2, required: true}
pipelines:
  orders:
    entity: orders
    source: {kind: nats, servers: [nats://127.0.0.1:$nats_port], stream: ORDERS, partitions: $PARTITIONS, format: jsonl, owner_timeout: 4s, rebalance_interval: 1s}
    batch_size: $BATCH
YAML
"$BUILD/tidemark" nats setup --pipeline orders --config "$config" >"$WORK/logs/setup.log"
log "publishing $ROWS records over $KEYS keys to $PARTITIONS partitions"
published=$SECONDS
"$BUILD/nats_publish" "nats://127.0.0.1:$nats_port" ORDERS "$PARTITIONS" "$ROWS" "$KEYS"
log "published in $((SECONDS - published)) s"

now_ms() { date +%s%3N; }

# One round of W workers on a fresh database; prints the seconds it took.
load() {
  local workers=$1 database=$2 pids=() started ended
  psql_q postgres "DROP DATABASE IF EXISTS $database" >/dev/null 2>&1
  psql_q postgres "CREATE DATABASE $database" >/dev/null
  local url="$base_url/$database"
  "$BUILD/tidemark" migrate --database "$url" --config "$config" >>"$WORK/logs/migrate.log" 2>&1
  started=$(now_ms)
  for ((w = 0; w < workers; w++)); do
    TIDEMARK_DATABASE_URL="$url" "$BUILD/tidemark" serve --config "$config" --listen 127.0.0.1:0 \
      >>"$WORK/logs/serve-$database-$w.log" 2>&1 &
    pids+=($!)
  done
  until [[ "$(psql_q "$database" "SELECT coalesce(sum(input), 0) FROM batch_ledger")" == "$ROWS" ]]; do
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || die "a serve process ended early: see $WORK/logs/serve-$database-*.log"; done
    sleep 0.1
  done
  ended=$(now_ms)
  kill -TERM "${pids[@]}"
  wait "${pids[@]}" || true
  local runs
  runs="$(psql_q "$database" "SELECT count(DISTINCT worker) || ' workers ran ' || count(*) || ' runs' FROM runs")"
  log "$workers worker(s): $runs"
  python3 -c "print(f'{($ended - $started) / 1000:.2f}')"
}

printf '%s\n' "round workers seconds rows_per_s ratio_to_1"
for ((round = 1; round <= ROUNDS; round++)); do
  base=""
  for workers in $WORKERS; do
    seconds="$(load "$workers" "bench_r${round}_w${workers}")"
    rate="$(python3 -c "print(round($ROWS / $seconds))")"
    [[ -z "$base" ]] && base=$rate
    printf '%s %s %s %s %s\n' "$round" "$workers" "$seconds" "$rate" "$(python3 -c "print(f'{$rate / $base:.2f}')")"
  done
done
