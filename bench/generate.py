#!/usr/bin/env python3
"""Deterministic, streaming dataset generator for the Tidemark throughput benchmark.

Rows are produced in blocks of BLOCK (1,000) rows; every batch size that is a multiple of
BLOCK therefore sees the same mix in each batch. Per block, in shuffled order:
  60% new keys (revision 1),
  25% newer revisions of keys from earlier blocks (current revision + 1),
  10% stale revisions of keys from earlier blocks (a revision below the current one),
   5% exact duplicates of a row earlier in the same block.
A record's payload is a pure function of (key, revision), so a stale or repeated revision
never conflicts with what was stored, unless --conflicts N turns N of every 100 stale rows
into a repeat of the key's current revision with a different amount: a same-revision
conflict (docs/rules.md rule 2) that exercises the quarantine path.
Accounts: key k belongs to account k // KEYS_PER_ACCOUNT_GROUP % ACCOUNTS, so a few
neighbouring keys share an account and per-account sequences are contended in a batch.

--entity orders writes the declared 12-field entity of bench/run_bench.sh's ENTITY=1 mode
instead of the built-in transaction's five columns: key order_id, revision version, and
customer_id (the partition, grouped like the accounts), status, quantity, points, amount
(14,4), unit_price (10,2), tax_rate (5,4), placed_at, updated_at, ship_date, paid, meta
(json); as CSV or, with --format jsonl, JSON Lines. The same seed gives the same keys,
revisions and mix as the built-in dataset; some optional fields are absent by design.

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


def group_stamps():
    """group -> its formatted timestamp (one per KEYS_PER_ACCOUNT_GROUP keys), cached: formatting
    is the generator's slowest step, and the cache is bounded so memory stays flat."""
    stamps = {}

    def stamp_of(group):
        stamp = stamps.get(group)
        if stamp is None:
            stamp = timestamp(BASE_EPOCH + (group * 37) % 31_000_000)
            if len(stamps) > 100_000:
                stamps.clear()
            stamps[group] = stamp
        return stamp

    return stamp_of


def transaction_rows(accounts):
    """The built-in transaction entity: (CSV header, row(key, revision, conflict) -> line)."""
    stamp_of = group_stamps()

    def row(key, revision, conflict=False):
        cents = (key * 7919 + revision * 104729) % 10_000_000 + (1 if conflict else 0)
        group = key // KEYS_PER_ACCOUNT_GROUP
        stamp = stamp_of(group)
        return (f"T{key:09d},{revision},{cents // 100}.{cents % 100:02d},"
                f"A{group % accounts:06d},{stamp}\n")

    return "transaction_id,source_revision,amount,account_id,occurred_at\n", row


# The declared entity of run_bench.sh's ENTITY=1 mode; run_bench.sh declares these fields.
ORDER_FIELDS = ("order_id", "version", "customer_id", "status", "quantity", "points", "amount",
                "unit_price", "tax_rate", "placed_at", "updated_at", "ship_date", "paid", "meta")
STATUSES = ("placed", "paid", "packed", "shipped", "delivered", "returned")
TAX_RATES = ("0.0000", "0.0550", "0.0700", "0.1900", "0.2000")


def order_rows(accounts, fmt):
    """The 12-field orders entity: (header, row(key, revision, conflict) -> line).

    Every value is a pure function of (key, revision), as for the built-in entity; a conflict
    changes the amount by 0.0001. Absent by design: points in 1 of 5 versions, meta in 1 of 7,
    ship_date unless the status is shipped, delivered or returned.
    """
    stamp_of = group_stamps()  # placed_at per customer group, as occurred_at above

    def values(key, revision, conflict):
        mix = (key * 2654435761 + revision * 40503) & 0xFFFFFFFF
        group = key // KEYS_PER_ACCOUNT_GROUP
        placed = stamp_of(group)
        amount = (key * 7919 + revision * 104729) % 1_000_000_000 + (1 if conflict else 0)
        price = mix % 10_000_000
        status = revision % len(STATUSES)
        updated = timestamp(BASE_EPOCH + (key * 37 + revision * 3631) % 31_000_000)
        return {
            "order_id": f"O{key:09d}",
            "version": revision,
            "customer_id": f"C{group % accounts:06d}",
            "status": STATUSES[status],
            "quantity": 1 + mix % 500,
            "points": None if mix % 5 == 0 else (mix >> 3) % 100_000 - 5_000,
            "amount": f"{amount // 10_000}.{amount % 10_000:04d}",
            "unit_price": f"{price // 100}.{price % 100:02d}",
            "tax_rate": TAX_RATES[(mix >> 7) % len(TAX_RATES)],
            "placed_at": placed,
            "updated_at": f"{updated[:-1]}.{mix % 1000:03d}Z",
            "ship_date": placed[:10] if status >= 3 else None,
            "paid": status >= 1,
            "meta": None if mix % 7 == 0 else
            f'{{"sku": "S{mix % 100_000:05d}", "gift": {"true" if mix & 64 else "false"}, '
            f'"tags": ["bench", "r{revision}"]}}',
        }

    def csv_row(key, revision, conflict=False):
        v = values(key, revision, conflict)
        if v["meta"] is not None:  # a JSON text in a CSV field: quoted, its quotes doubled
            v["meta"] = '"' + v["meta"].replace('"', '""') + '"'
        v["paid"] = "true" if v["paid"] else "false"
        return ",".join("" if v[name] is None else str(v[name]) for name in ORDER_FIELDS) + "\n"

    def jsonl_row(key, revision, conflict=False):
        # Text as JSON strings, integers and decimals as JSON numbers, meta as an object.
        # An absent value is null (points) or a missing member (ship_date, meta): both are
        # absent to the entity.
        v = values(key, revision, conflict)
        members = []
        for name in ORDER_FIELDS:
            value = v[name]
            if value is None:
                if name == "points":
                    members.append(f'"{name}": null')
                continue
            if name in ("version", "quantity", "points", "amount", "unit_price", "tax_rate", "meta"):
                members.append(f'"{name}": {value}')
            elif name == "paid":
                members.append(f'"{name}": {"true" if value else "false"}')
            else:
                members.append(f'"{name}": "{value}"')
        return "{" + ", ".join(members) + "}\n"

    if fmt == "jsonl":
        return "", jsonl_row
    return ",".join(ORDER_FIELDS) + "\n", csv_row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--accounts", type=int, default=10007)
    parser.add_argument("--conflicts", type=int, default=0,
                        help="per 100 stale rows, this many repeat the current revision with another amount")
    parser.add_argument("--entity", choices=("transaction", "orders"), default="transaction",
                        help="transaction: the built-in entity; orders: the declared 12-field entity")
    parser.add_argument("--format", choices=("csv", "jsonl"), default="csv",
                        help="jsonl only with --entity orders")
    parser.add_argument("--output", default="-")
    args = parser.parse_args()
    if args.format == "jsonl" and args.entity != "orders":
        parser.error("--format jsonl needs --entity orders")

    rng = random.Random(args.seed)
    header, row = (order_rows(args.accounts, args.format) if args.entity == "orders"
                   else transaction_rows(args.accounts))
    out = sys.stdout if args.output == "-" else open(args.output, "w", newline="")
    out.write(header)

    current = array("q")  # current (highest generated) revision per key

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
