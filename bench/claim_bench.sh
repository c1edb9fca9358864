#!/usr/bin/env bash
# The relay's claim: what one claim of 64 events costs at a backlog of N pending
# events, before (claim.sql of OLD_REF, a scan of the pending rows with a per-row probe) and
# after (the per-key heads of migration 0015), each with and without ANALYZE, and the relay's
# events/s against a trivial receiver (a Node.js http server answering 200 at once, in its own
# process). See docs/performance.md, "The relay's claim". Usage:
#
#   bench/claim_bench.sh                         # N = 10k, 100k, 1M
#   SIZES="10000 100000" CLAIMS=50 bench/claim_bench.sh
#
# SIZES ("10000 100000 1000000")  pending events of the destination, over N/10 accounts
# CLAIMS (30)           claims timed per case; each records the previous claim's 64 events
#                       as delivered, as the relay's loop does (one statement per loop)
# CLAIM_TIMEOUT (30)    seconds one claim may take; a case where one takes longer shows
#                       "timeout" (the old statement's plan without statistics can be
#                       quadratic in the pending rows)
# RELAY_SECONDS (15)    how long `tidemark relay --once` runs per case (max_in_flight 64);
#                       events/s = delivered / elapsed. 0 skips it
# OLD_REF (4faf876)     the commit whose sql/relay/claim.sql is "before"
# TIDEMARK (build/tidemark)  the binary; WORK (/tmp/tidemark-claim-bench)  cluster and logs
#
# Every case is a copy of one filled database per N (CREATE DATABASE ... TEMPLATE), with
# autovacuum off so that "without ANALYZE" stays true. The "before" copy gets the schema the
# old statement ran on: outbox_due back, the head triggers off.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
SIZES="${SIZES:-10000 100000 1000000}"
CLAIMS="${CLAIMS:-30}"
CLAIM_TIMEOUT="${CLAIM_TIMEOUT:-30}"
RELAY_SECONDS="${RELAY_SECONDS:-15}"
OLD_REF="${OLD_REF:-4faf876}"
TIDEMARK="${TIDEMARK:-$repo/build/tidemark}"
WORK="${WORK:-/tmp/tidemark-claim-bench}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
BATCH=64

# shellcheck source=bench/bench_lib.sh
source "$here/bench_lib.sh"
[[ -x "$TIDEMARK" ]] || die "$TIDEMARK not found (ninja -C build tidemark, or set TIDEMARK)"
[[ -x "$PGBIN/initdb" ]] || die "PostgreSQL 15 server binaries not found in $PGBIN (set PGBIN)"
old_claim="$(git -C "$repo" show "$OLD_REF:sql/relay/claim.sql")" || die "no sql/relay/claim.sql at $OLD_REF"
new_claim="$(cat "$repo/sql/relay/claim.sql")"

# --- a private cluster: loopback only, fsync on, autovacuum off -----------------------------
mkdir -p "$WORK"
start_cluster -c autovacuum=off
psql_db() { local db="$1"; shift; psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$base_url/$db" "$@"; }

# --- the receiver and the relay's config -----------------------------------------------------
start_receiver  # bench/receiver.js in its own process: 200 at once
cat >"$WORK/relay.yaml" <<EOF
pipelines:
  bench:
    source: {kind: file, path: $WORK/none.csv}
    destinations:
      - {name: ledger, kind: http, url: $receiver_url/events, secret_env: BENCH_SECRET}
relay: {max_in_flight: 64}
EOF
export BENCH_SECRET="whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ="

# The claim statement as one that returns the ids it claimed ('{…}'), their attempts and their
# count, so that psql can carry them into the next claim (\gset), as the relay does.
counted() {  # $1: a claim statement
  python3 - "$1" <<'EOF'
import re, sys
text = "\n".join(l for l in sys.argv[1].splitlines() if not l.lstrip().startswith("--"))
if text.lstrip().startswith("WITH"):
    # Data-modifying WITH must stay at the top: the final UPDATE becomes one more CTE.
    head, sep, tail = text.rpartition("\nUPDATE outbox")
    text = head + ",\nclaimed AS (UPDATE outbox" + tail + ")\n"
else:
    text = "WITH claimed AS (" + text + ")\n"
print(text + "SELECT coalesce('{' || string_agg(id::text, ',') || '}', '{}') AS ids, "
             "coalesce('{' || string_agg(attempts::text, ',') || '}', '{}') AS attempts, count(*) AS n FROM claimed")
EOF
}

# The parameters of each claim statement, and its arguments (ids and attempts: the previous
# claim's, recorded as delivered). The old one takes no attempts; the new one takes a limit
# per destination (migration 0023) besides the limit across them.
declare -A claim_types=([old]="text[], bigint, bigint, bigint[]" [new]="text[], bigint[], bigint, bigint, bigint[], int[]")
declare -A claim_args=([old]="'{ledger}', $BATCH, 600000, :'ids'" [new]="'{ledger}', '{$BATCH}', $BATCH, 600000, :'ids', :'attempts'")

# Times CLAIMS claims of 64 on database $1 with the $2 (old|new) statement; prints ms per claim.
time_claims() {
  local db="$1" kind="$2" script="$WORK/claims.sql" statement
  [[ "$kind" == old ]] && statement="$old_claim" || statement="$new_claim"
  {
    echo "SET statement_timeout = '${CLAIM_TIMEOUT}s';"
    echo "PREPARE claim(${claim_types[$kind]}) AS $(counted "$statement");"
    echo "\\set ids '{}'"
    echo "\\set attempts '{}'"
    echo "SELECT clock_timestamp() AS started \\gset"
    for ((i = 0; i < CLAIMS; i++)); do echo "EXECUTE claim(${claim_args[$kind]}) \\gset"; done
    echo "SELECT round(extract(epoch FROM clock_timestamp() - :'started') * 1000 / $CLAIMS, 2), :n;"
  } >"$script"
  psql_db "$db" -f "$script" 2>/dev/null || printf 'timeout (> %s s)|-' "$CLAIM_TIMEOUT"
}

# The plan of the statement that finds the events to claim, on database $1 ($2: old|new).
explain_claim() {
  local db="$1" kind="$2"
  if [[ "$kind" == old ]]; then
    psql_db "$db" -c "PREPARE c(text[], bigint, bigint, bigint[]) AS $(counted "$old_claim");" \
      -c "EXPLAIN EXECUTE c('{ledger}', $BATCH, 600000, '{}')"
  else
    # The function's statements, through auto_explain at NOTICE.
    psql_db "$db" -c "LOAD 'auto_explain'" -c "SET auto_explain.log_min_duration = 0" \
      -c "SET auto_explain.log_nested_statements = on" -c "SET auto_explain.log_level = notice" \
      -c "SET auto_explain.log_analyze = on" -c "SET auto_explain.log_buffers = on" -c "SET auto_explain.log_timing = off" \
      -c "SELECT count(*) FROM tidemark_relay_claim('{ledger}', '{$BATCH}', $BATCH, 600000, '{}', '{}')" 2>&1 | grep -v '^$' | head -200
  fi
}

relay_rate() {  # events/s of `tidemark relay --once` for RELAY_SECONDS on database $1
  local db="$1" started ended delivered
  started="$(date +%s.%N)"
  timeout -s INT "$RELAY_SECONDS" "$TIDEMARK" relay --once --config "$WORK/relay.yaml" --database "$base_url/$db" \
    >"$WORK/relay-$db.log" 2>&1 || true
  ended="$(date +%s.%N)"
  delivered="$(psql_db "$db" -c "SELECT count(*) FROM outbox WHERE status = 'delivered'")"
  python3 -c "print(round($delivered / ($ended - $started)))"
}

echo "cpus: $(nproc), load: $(cut -d' ' -f1-3 /proc/loadavg), claims of $BATCH, $CLAIMS per case"
printf 'pending\tclaim\tanalyze\tms_per_claim\tclaimed_last\trelay_events_per_s\n'
for n in $SIZES; do
  accounts=$((n / 10))
  template="fill_$n"
  log "filling $n pending events over $accounts accounts"
  psql_db postgres -c "DROP DATABASE IF EXISTS $template" -c "CREATE DATABASE $template"
  "$TIDEMARK" migrate --database "$base_url/$template" 2>/dev/null >/dev/null
  # Rows as apply_batch.sql writes them, then their heads by migration 0015's own statement.
  psql_db "$template" <<EOF
BEGIN;
SET LOCAL tidemark.outbox_heads = 'kept';
INSERT INTO outbox (destination, idempotency_key, partition_key, sequence, payload)
SELECT 'ledger', 'ledger:tx-' || i || ':1', 'acct-' || (i % $accounts), i / $accounts + 1,
       jsonb_build_object('event_id', 'ledger:tx-' || i || ':1', 'transaction_id', 'tx-' || i,
                          'account_id', 'acct-' || (i % $accounts), 'amount', '10.00', 'source_revision', 1,
                          'sequence', i / $accounts + 1, 'pipeline', 'bench')
  FROM generate_series(0, $n - 1) AS i;
INSERT INTO tidemark_destination_sequence (destination, partition_key, last_sequence)
SELECT destination, partition_key, max(sequence) FROM outbox GROUP BY 1, 2;
UPDATE tidemark_destination_sequence h
   SET head_sequence = p.sequence, head_due_at = p.next_attempt_at
  FROM (SELECT DISTINCT ON (destination, partition_key) destination, partition_key, sequence, next_attempt_at
          FROM outbox WHERE status = 'pending' ORDER BY destination, partition_key, sequence) p
 WHERE h.destination = p.destination AND h.partition_key = p.partition_key;
COMMIT;
CHECKPOINT;
EOF
  for kind in old new; do
    for analyze in no yes; do
      db="c_${n}_${kind}_${analyze}"
      psql_db postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db TEMPLATE $template"
      if [[ "$kind" == old ]]; then
        psql_db "$db" -c "DROP TRIGGER outbox_keeps_heads_on_insert ON outbox" \
          -c "DROP TRIGGER outbox_keeps_heads_on_update ON outbox" -c "DROP TRIGGER outbox_keeps_heads_on_delete ON outbox" \
          -c "CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE status = 'pending'"
      fi
      [[ "$analyze" == yes ]] && psql_db "$db" -c "ANALYZE"
      if [[ "$n" == "${SIZES##* }" && "$analyze" == no ]]; then
        explain_claim "$db" "$kind" >"$WORK/explain-$n-$kind.txt" 2>&1 || true
      fi
      result="$(time_claims "$db" "$kind")"
      rate="-"  # the old statement is not in this binary: its events/s are not measured here
      if [[ "$RELAY_SECONDS" != 0 && "$kind" == new ]]; then
        psql_db postgres -c "DROP DATABASE $db" -c "CREATE DATABASE $db TEMPLATE $template"
        [[ "$analyze" == yes ]] && psql_db "$db" -c "ANALYZE"
        rate="$(relay_rate "$db")"
      fi
      printf '%s\t%s\t%s\t%s\t%s\n' "$n" "$kind" "$analyze" "${result//|/$'\t'}" "$rate"
      psql_db postgres -c "DROP DATABASE $db"
    done
  done
  psql_db postgres -c "DROP DATABASE $template"
done
echo "plans (largest N, without ANALYZE): $WORK/explain-*.txt"
