#!/usr/bin/env python3
"""Deterministic, streaming CSV generator for the Tidemark throughput benchmark.

Rows are produced in blocks of BLOCK (1,000) rows; every batch size that is a multiple of
BLOCK therefore sees the same mix in each batch. Per block, in shuffled order:
  60% new keys (revision 1),
  25% newer revisions of keys from earlier blocks (current revision + 1),
  10% stale revisions of keys from earlier blocks (a revision below the current one),
   5% exact duplicates of a row earlier in the same block.
A record's payload is a pure function of (key, revision), so a stale or repeated revision
never conflicts with what was stored, unless --conflicts N turns N of every 100 stale rows
into a repeat of the key's current revision with a different amount: a same-revision
conflict (DESIGN rule 2) that exercises the quarantine path.
Accounts: key k belongs to account k // KEYS_PER_ACCOUNT_GROUP % ACCOUNTS, so a few
neighbouring keys share an account and per-account sequences are contended in a batch.

Memory is one small int per key (array('q')), so 10M rows stay well under 200 MB.
"""
import argparse
import random
import sys
from array import array

BLOCK = 1000
NEW, NEWER, STALE, DUP = 600, 250, 100, 50  # per BLOCK rows
KEYS_PER_ACCOUNT_GROUP = 4
BASE_EPOCH = 1714521600  # 2024-05-01T00:00:00Z


def timestamp(seconds):
    # Fast UTC formatting for a range of < 1 year after BASE_EPOCH (May 2024 - Apr 2025).
    days, rest = divmod(seconds - BASE_EPOCH, 86400)
    hour, rest = divmod(rest, 3600)
    minute, second = divmod(rest, 60)
    month_days = (31, 30, 31, 31, 30, 31, 30, 31, 31, 28, 31, 30)  # from May
    month, year = 5, 2024
    for length in month_days:
        if days < length:
            break
        days -= length
        month += 1
        if month == 13:
            month, year = 1, 2025
    return f"{year}-{month:02d}-{days + 1:02d}T{hour:02d}:{minute:02d}:{second:02d}Z"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--accounts", type=int, default=10007)
    parser.add_argument("--conflicts", type=int, default=0,
                        help="per 100 stale rows, this many repeat the current revision with another amount")
    parser.add_argument("--output", default="-")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    out = sys.stdout if args.output == "-" else open(args.output, "w", newline="")
    out.write("transaction_id,source_revision,amount,account_id,occurred_at\n")

    current = array("q")  # current (highest generated) revision per key
    stamps = {}  # cache of formatted occurred_at per key group (one timestamp per 4 keys)
    accounts = args.accounts

    def row(key, revision, conflict=False):
        cents = (key * 7919 + revision * 104729) % 10_000_000 + (1 if conflict else 0)
        group = key // KEYS_PER_ACCOUNT_GROUP
        stamp = stamps.get(group)
        if stamp is None:
            stamp = timestamp(BASE_EPOCH + (group * 37) % 31_000_000)
            if len(stamps) > 100_000:
                stamps.clear()
            stamps[group] = stamp
        return (f"T{key:09d},{revision},{cents // 100}.{cents % 100:02d},"
                f"A{group % accounts:06d},{stamp}\n")

    kinds = [0] * NEW + [1] * NEWER + [2] * STALE + [3] * DUP
    produced = 0
    while produced < args.rows:
        earlier = len(current)  # keys from earlier blocks, eligible for updates and stale rows
        rng.shuffle(kinds)
        lines = []
        for kind in kinds:
            if kind == 3 and lines:
                lines.append(lines[rng.randrange(len(lines))])
                continue
            if kind == 0 or earlier == 0 or kind == 3:
                current.append(1)
                lines.append(row(len(current) - 1, 1))
                continue
            key = rng.randrange(earlier)
            if kind == 1:
                current[key] += 1
                lines.append(row(key, current[key]))
            else:
                if args.conflicts and rng.randrange(100) < args.conflicts:
                    lines.append(row(key, current[key], conflict=True))
                else:
                    lines.append(row(key, rng.randrange(current[key])))  # older than the current
        take = min(BLOCK, args.rows - produced)
        out.write("".join(lines[:take]))
        produced += take
    out.flush()
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
