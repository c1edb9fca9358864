#!/usr/bin/env python3
"""Summarise a run_bench.sh results file: rates, the median P/B ratio, replay, RSS, sweep.

Kinds: B = psql baseline, P = tidemark run (first load), R = tidemark run --replay.
Fingerprints (state, outbox, quarantine, sequences, ledger) of every B and P run on the same
rows and batch size must be equal: otherwise the two did not do the same work.
"""
import csv
import statistics
import sys


def main():
    path, main_batch = sys.argv[1], int(sys.argv[2])
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for row in rows:
        row["batch"], row["rows"] = int(row["batch"]), int(row["rows"])
        row["rows_per_s"] = float(row["rows_per_s"])
    main_rows = max((r["rows"] for r in rows if r["batch"] == main_batch and r["kind"] == "B"), default=0)

    def rates(kind, batch, n=None):
        return [r["rows_per_s"] for r in rows
                if r["kind"] == kind and r["batch"] == batch and r["rows"] == (n or main_rows)]

    ok = True
    for batch in sorted({r["batch"] for r in rows}):
        prints = {r["fingerprint"] for r in rows
                  if r["batch"] == batch and r["rows"] == main_rows and r["kind"] in ("B", "P")}
        if len(prints) > 1:
            ok = False
            print(f"MISMATCH at batch {batch}: B and P left different effects:")
            for p in sorted(prints):
                print("   ", p)

    b, p, replay = rates("B", main_batch), rates("P", main_batch), rates("R", main_batch)
    print(f"\n== {main_rows} rows, batch {main_batch} (order B P P B) ==")
    print("B (psql baseline) rows/s:", ", ".join(f"{x:.0f}" for x in b))
    print("P (tidemark run)  rows/s:", ", ".join(f"{x:.0f}" for x in p))
    if b and p:
        print(f"median P/B ratio: {statistics.median(p) / statistics.median(b):.2f}"
              f"  (median P {statistics.median(p):.0f} / median B {statistics.median(b):.0f})")
    if replay and p:
        print("R (replay, all unchanged) rows/s:", ", ".join(f"{x:.0f}" for x in replay),
              f"-> {statistics.median(replay) / statistics.median(p):.2f}x the first load")
    for r in rows:
        if r["kind"] in ("P", "R") and r["peak_rss_kib"]:
            print(f"{r['kind']} rows {r['rows']} batch {r['batch']}: peak RSS "
                  f"{int(r['peak_rss_kib']) / 1024:.1f} MiB, tidemark CPU {r['cpu_s']} s of {r['seconds']} s")
    sweep = sorted({r["batch"] for r in rows if r["rows"] == main_rows})
    if len(sweep) > 1:
        print("\nsweep (median rows/s):  batch | B | P | P/B")
        for batch in sweep:
            bb, pp = rates("B", batch), rates("P", batch)
            if bb and pp:
                mb, mp = statistics.median(bb), statistics.median(pp)
                print(f"  {batch:>6} | {mb:.0f} | {mp:.0f} | {mp / mb:.2f}")
    print("\neffects of B and P identical:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
