#!/usr/bin/env python3
"""Load generator of bench/latency.sh: appends LINES complete CSV lines (new transactions,
revision 1, over 1,000 accounts) to FILE every TICK seconds for DURATION seconds, one write
per block, and logs each block's append time (epoch microseconds) to LOG as
"<block>\t<time>". Block b holds the transaction ids L<b:06d><i:03d>."""
import argparse
import os
import time

parser = argparse.ArgumentParser()
parser.add_argument("--file", required=True)
parser.add_argument("--log", required=True)
parser.add_argument("--lines", type=int, default=100)
parser.add_argument("--tick", type=float, default=0.1)
parser.add_argument("--duration", type=float, default=60)
args = parser.parse_args()

blocks = int(args.duration / args.tick)
start = time.monotonic()
with open(args.file, "a") as out, open(args.log, "w") as log:
    for block in range(blocks):
        # On a fixed schedule, not "tick after the last write": the rate stays steady.
        delay = start + block * args.tick - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        lines = "".join(
            f"L{block:06d}{i:03d},1,{1 + i}.00,A{(block * args.lines + i) % 1000:04d},2024-05-01T00:00:00Z\n"
            for i in range(args.lines))
        out.write(lines)
        out.flush()
        log.write(f"{block}\t{time.time_ns() // 1000}\n")
