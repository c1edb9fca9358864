#!/usr/bin/env python3
"""Summarise a bench/cost_model.sh results file into the cost model's tables.

Per (stored rows, batch, destinations): the median over the repetitions (repetition 0, the
EXPLAIN one, is left out) of each part's time and WAL with every index of the change log
(variant `all`), per input row; then the log's indexes priced by subtraction, per change:
`all` minus the variant without that index, and `all` minus `key` (no secondary index).
"""
import collections
import csv
import statistics
import sys

PARTS = ("copy", "group", "join", "upsert", "sequences", "payload", "log", "ledger")


def main():
    with open(sys.argv[1], newline="") as f:
        rows = [r for r in csv.DictReader(f, delimiter="\t") if r["rep"] != "0"]
    samples = collections.defaultdict(list)  # (stored, batch, dests, variant, part) -> [(ms, wal)]
    log_rows = {}
    for r in rows:
        key = (int(r["stored"]), int(r["batch"]), int(r["destinations"]))
        samples[key + (r["variant"], r["part"])].append((float(r["ms"]), float(r["wal_bytes"])))
        if r["part"] == "log":
            log_rows[key] = int(r["log_rows"])
    configs = sorted({k[:3] for k in samples})

    def median(key, variant, part, which):
        values = [s[which] for s in samples.get(key + (variant, part), [])]
        return statistics.median(values) if values else float("nan")

    print("## per input row, every index of the log (median of the repetitions): µs | WAL bytes")
    print("| stored | batch | dest | " + " | ".join(PARTS) + " | total |")
    print("| --- " * (len(PARTS) + 4) + "|")
    for key in configs:
        stored, batch, dests = key
        cells, total_us, total_wal = [], 0.0, 0.0
        for part in PARTS:
            us = median(key, "all", part, 0) * 1000 / batch
            wal = median(key, "all", part, 1) / batch
            total_us += us
            total_wal += wal
            cells.append(f"{us:.1f} \\| {wal:.0f}")
        print(f"| {stored:,} | {batch:,} | {dests} | " + " | ".join(cells) + f" | {total_us:.1f} \\| {total_wal:.0f} |")

    print("\n## the change log's indexes, per change (all minus without it): µs | WAL bytes")
    variants = sorted({k[3] for k in samples if k[3].startswith("-")})
    print("| stored | batch | dest | changes | insert, every index | " +
          " | ".join(v[1:] for v in variants) + " | all secondary (all - key) |")
    print("| --- " * (len(variants) + 6) + "|")
    for key in configs:
        n = log_rows.get(key)
        if not n:
            continue
        all_ms, all_wal = median(key, "all", "log", 0), median(key, "all", "log", 1)
        cells = []
        for v in variants + ["key"]:
            ms, wal = median(key, v, "log", 0), median(key, v, "log", 1)
            cells.append(f"{(all_ms - ms) * 1000 / n:.1f} \\| {(all_wal - wal) / n:.0f}")
        print(f"| {key[0]:,} | {key[1]:,} | {key[2]} | {n:,} | {all_ms * 1000 / n:.1f} \\| {all_wal / n:.0f} | " +
              " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
