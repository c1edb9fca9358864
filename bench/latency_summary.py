#!/usr/bin/env python3
"""Summary of bench/latency.sh: joins the receiver's arrivals (first arrival per webhook-id)
with each event's outbox created_at and its block's append time, and prints the latencies
(milliseconds) at p50, p99 and max. Usage: latency_summary.py LABEL ARRIVALS CREATED FEED_LOG,
CREATED holding "<idempotency key>\t<created_at epoch microseconds>" lines."""
import sys

label, arrivals_path, created_path, feed_path = sys.argv[1:5]
arrived = {}
for line in open(arrivals_path):
    time_us, key = line.rstrip("\n").split("\t")
    arrived.setdefault(key, int(time_us))
appended = {int(b): int(t) for b, t in (line.split("\t") for line in open(feed_path))}
from_commit, from_append, missing = [], [], 0
for line in open(created_path):
    key, created_us = line.rstrip("\n").split("\t")
    if key not in arrived:
        missing += 1
        continue
    block = int(key.split(":")[1][1:7])
    from_commit.append((arrived[key] - int(float(created_us))) / 1000)
    from_append.append((arrived[key] - appended[block]) / 1000)


def quantiles(values):
    values = sorted(values)
    pick = lambda q: values[min(len(values) - 1, int(q * len(values)))]
    return f"p50 {pick(0.50):7.1f}  p99 {pick(0.99):7.1f}  max {values[-1]:7.1f}"


print(f"{label}: {len(from_commit)} events delivered, {missing} missing")
print(f"  batch transaction start (outbox.created_at) -> arrival, ms: {quantiles(from_commit)}")
print(f"  line appended to the file                    -> arrival, ms: {quantiles(from_append)}")
