#!/usr/bin/env bash
# Outbox relay throughput (issue 3): events/s from a pre-filled outbox to a loopback
# receiver that answers at once, next to that receiver's ceiling measured with the same
# client (the webhook sink, signing on) at the same concurrency without the database.
# Each line runs bench/relay_bench.cpp once; see docs/performance.md. Usage:
#
#   bench/relay_bench.sh                       # 20000 events over 1000 accounts, in flight 16 and 64
#   EVENTS=50000 IN_FLIGHT="16 64 128" bench/relay_bench.sh
#
# BUILD (build-bench)  build folder (cmake -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
BUILD="${BUILD:-$repo/build-bench}"
EVENTS="${EVENTS:-20000}"
ACCOUNTS="${ACCOUNTS:-1000}"
IN_FLIGHT="${IN_FLIGHT:-16 64}"

if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -S "$repo" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
ninja -C "$BUILD" relay_bench >/dev/null
echo "cpus: $(nproc), load: $(cut -d' ' -f1-3 /proc/loadavg)"
for in_flight in $IN_FLIGHT; do
  "$BUILD/relay_bench" "$EVENTS" "$ACCOUNTS" "$in_flight" 2> >(grep -v 'applying migration\|embedded PostgreSQL' >&2)
done
