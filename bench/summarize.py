#!/usr/bin/env python3
"""Summarise a run_bench.sh results file: rates, the median P/B ratio, replay, RSS, sweep.

Kinds: B = psql baseline, P = tidemark run (first load), R = tidemark run --replay; in the
entity mode (ENTITY=1) T = tidemark run of the built-in transaction entity and E = of the
declared 12-field entity, on their own datasets of the same rows.
Fingerprints (state, outbox, quarantine, sequences, ledger) of every B and P run on the same
rows and batch size must be equal: otherwise the two did not do the same work. In the entity
mode the T runs must agree among themselves, and so must the E runs.
"""
import csv
import statistics
import sys


RSS_LIMIT_MIB = 64  # peak RSS at the default batch size stays under this
DEFAULT_BATCH = 10_000  # tidemark run's default --batch-size


def entity_summary(rows, main_batch):
    """The entity mode: T and E side by side, the ratio E/T and whether each kind's runs agree."""
    main_rows = max((r["rows"] for r in rows if r["batch"] == main_batch and r["kind"] == "T"), default=0)
    ok = True
    for kind in ("T", "E"):
        prints = {r["fingerprint"] for r in rows
                  if r["kind"] == kind and r["batch"] == main_batch and r["rows"] == main_rows}
        if len(prints) > 1:
            ok = False
            print(f"MISMATCH: the {kind} runs left different effects:")
            for p in sorted(prints):
                print("   ", p)
    print(f"\n== {main_rows} rows, batch {main_batch} (order T E E T) ==")
    medians = {}
    for kind, name in (("T", "built-in transaction"), ("E", "declared orders, 12 fields")):
        runs = [r for r in rows if r["kind"] == kind and r["batch"] == main_batch and r["rows"] == main_rows]
        if not runs:
            continue
        rates = [r["rows_per_s"] for r in runs]
        mbps = [float(r["mb_per_s"]) for r in runs]
        rss = [int(r["peak_rss_kib"]) / 1024 for r in runs]
        medians[kind] = statistics.median(rates), statistics.median(mbps)
        print(f"{kind} ({name}, {int(runs[0]['input_bytes']) / main_rows:.0f} bytes/row)")
        print("   rows/s:", ", ".join(f"{x:.0f}" for x in rates), f"(median {medians[kind][0]:.0f})")
        print("   MB/s:  ", ", ".join(f"{x:.2f}" for x in mbps), f"(median {medians[kind][1]:.2f})")
        print("   peak RSS MiB:", ", ".join(f"{x:.1f}" for x in rss),
              "| tidemark CPU s:", ", ".join(r["cpu_s"] for r in runs))
        if max(rss) >= RSS_LIMIT_MIB and main_batch == DEFAULT_BATCH:
            ok = False
            print(f"   peak RSS {max(rss):.1f} MiB is not under {RSS_LIMIT_MIB} MiB")
    if "T" in medians and "E" in medians:
        print(f"ratio E/T of the medians: rows/s {medians['E'][0] / medians['T'][0]:.2f}, "
              f"MB/s {medians['E'][1] / medians['T'][1]:.2f}")
    for r in rows:
        if r["kind"] == "E" and r["rows"] != main_rows:  # the RSS_ROWS run
            rss = int(r["peak_rss_kib"]) / 1024
            ok = ok and (rss < RSS_LIMIT_MIB or r["batch"] != DEFAULT_BATCH)
            print(f"E rows {r['rows']} batch {r['batch']}: {r['rows_per_s']:.0f} rows/s, {r['mb_per_s']} MB/s, "
                  f"peak RSS {rss:.1f} MiB")
    print(f"\neach kind's runs agree and peak RSS under {RSS_LIMIT_MIB} MiB at batch {DEFAULT_BATCH}:",
          "yes" if ok else "NO")
    return 0 if ok else 1


def main():
    path, main_batch = sys.argv[1], int(sys.argv[2])
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for row in rows:
        row["batch"], row["rows"] = int(row["batch"]), int(row["rows"])
        row["rows_per_s"] = float(row["rows_per_s"])
    if any(r["kind"] == "E" for r in rows):
        return entity_summary(rows, main_batch)
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
