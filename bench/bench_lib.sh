# Shared by the bench/ scripts (sourced, not run): logging, the tool checks, a private
# PostgreSQL 15 cluster under $WORK/pg, and the Node.js receiver.
# The caller sets WORK and PGBIN; `set -euo pipefail` is the caller's.

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# require_tool NAME INSTALL_COMMAND: exits with the install command when NAME is missing.
require_tool() {
  command -v "$1" >/dev/null 2>&1 || die "$1 not found: install it with \`$2\` (the benchmark needs it; CI does not)"
}

as_pg() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# Starts the cluster (initdb once) on a free loopback port, fsync on, and stops it on exit;
# arguments are more server settings ("-c autovacuum=off"). Sets base_url
# (postgresql://postgres@127.0.0.1:PORT, no database).
start_cluster() {
  local pgdata="$WORK/pg" port
  [[ -x "$PGBIN/initdb" ]] || die "PostgreSQL 15 server binaries not found in $PGBIN (set PGBIN)"
  mkdir -p "$WORK/logs"
  chmod 755 "$WORK"
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  if [[ ! -f "$pgdata/PG_VERSION" ]]; then
    log "initdb $pgdata"
    mkdir -p "$pgdata"
    [[ $(id -u) -eq 0 ]] && chown postgres:postgres "$pgdata"
    as_pg "$PGBIN/initdb" -D "$pgdata" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$WORK/logs/initdb.log"
  fi
  as_pg "$PGBIN/pg_ctl" -D "$pgdata" -l "$pgdata/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=/tmp -c fsync=on -c synchronous_commit=on -c max_wal_size=4GB $*" \
    start >/dev/null
  cleanups+=("as_pg $PGBIN/pg_ctl -D $pgdata -m fast stop")
  base_url="postgresql://postgres@127.0.0.1:$port"
}

# Prints the path of the built-in entity's dataset of ROWS rows (bench/generate.py, seed
# $SEED), generated under $WORK/data once: the same rows, seed and file for every script.
generated_csv() {  # rows
  local file="$WORK/data/rows-$1-seed-$SEED.csv"
  if [[ ! -s "$file" ]]; then
    log "generating $1 rows (seed $SEED) into $file"
    python3 "$here/generate.py" --rows "$1" --seed "$SEED" --output "$file.tmp"
    mv "$file.tmp" "$file"
  fi
  echo "$file"
}

psql_q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$base_url/${1}" -c "$2"; }

# Starts bench/receiver.js [ARRIVALS_FILE]; sets receiver_url (http://127.0.0.1:PORT).
start_receiver() {
  local port_file="$WORK/receiver.port"
  rm -f "$port_file"
  node "$here/receiver.js" "$port_file" "$@" 2>>"$WORK/logs/receiver.log" &
  local pid=$!
  cleanups+=("kill $pid")
  for _ in $(seq 100); do [[ -s "$port_file" ]] && break; sleep 0.05; done
  [[ -s "$port_file" ]] || die "the receiver did not start, see $WORK/logs/receiver.log"
  receiver_url="http://127.0.0.1:$(cat "$port_file")"
  receiver_pid=$pid
}

# Everything started is stopped on exit, the latest first.
cleanups=()
run_cleanups() {
  local i
  for ((i = ${#cleanups[@]} - 1; i >= 0; i--)); do eval "${cleanups[i]}" >/dev/null 2>&1 || true; done
}
trap run_cleanups EXIT
