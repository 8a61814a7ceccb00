"""Does node-level token throttling change the throughput of an incast and of an all-to-all on the
emulated fabric (root)? Prints Markdown tables; --json keeps every run.

    .venv/bin/python benchmarks/throttle_fabric.py [--nodes 4] [--ppn 2] [--link 200mbit]
        [--queue 1ms] [--repeats 3] [--tokens 1,2,4] [--json FILE]

A star of N nodes, K ranks each, links shaped by tbf with a small queue (--queue is tbf's latency:
a link holds rate x queue + 128 KiB and drops the rest, like a shallow switch buffer). Patterns
(contend-bench, MPICH over TCP):
  incast    ranks 1..P-1 each stream 16 x 64 KiB into rank 0 at once; through node 0's link
            come the (N-1) x K ranks of the other nodes (rank 0's node-mates stay inside the node)
  alltoall  overlapped: every rank posts all receives, then sends to every other rank at once
            (64 KiB and 1 MiB messages)
Variants, interleaved in each repetition (order rotated): no throttle, and libcontend-throttle.so with
a node pool of T tokens (one per message; stall escape after 1 s, so the limit holds through TCP
retransmission timeouts). Figures per run:
  incast    goodput into node 0 = remote senders x 16 x size / time until the last remote sender's
            data is in (from each sender's median iteration)
  alltoall  goodput over the links = messages between nodes x size / the slowest rank's median
            iteration; shown also as a share of N x link (every node's link busy both ways)
  drops     packets the tbf queues dropped during the run (all links)
  waits     token waits per rank (median), and escapes (should be 0)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from contend.native import fabric, libthrottle
from contend.native.bench.runner import run_benchmark

PREFIX = "ctdm-"
INCAST_SIZE, INCAST_WINDOW = 65536, 16
ALLTOALL_SIZES = (65536, 1 << 20)


def measure(pattern: str, size: int, built: fabric.Fabric, tokens: int | None, iters: int) -> dict:
    ranks = built.nodes * built.ppn
    with tempfile.TemporaryDirectory(prefix="contend-throttle-") as scratch:
        stats = Path(scratch) / "stats.jsonl"
        variables = None if tokens is None else libthrottle.settings("token", tokens=tokens, stall_ms=1000,
                                                                 stats=stats)
        before = fabric.dropped_packets(built)
        options = {"window": INCAST_WINDOW} if pattern == "incast" else {}
        run = run_benchmark(pattern, ranks=ranks, sizes=[size], iters=iters, warmup=1, options=options,
                            fabric=built, timeout_s=600, throttle=variables)
        drops = fabric.dropped_packets(built) - before
        counters = libthrottle.read_stats(stats)
    rows = run.results
    if pattern == "incast":
        remote = rows[rows["rank"] >= built.ppn]  # senders on other nodes than the hub's
        goodput = len(remote) * size / (remote["t_p50_ns"].max() * 1e-9)
        share = goodput / built.link_Bps
    else:
        between_nodes = ranks * (ranks - built.ppn)  # messages that cross links per exchange
        exchange_s = rows["t_p50_ns"].max() * (ranks - 1) * 1e-9
        goodput = between_nodes * size / exchange_s
        share = goodput / (built.nodes * built.link_Bps)
    return {"pattern": pattern, "bytes": size, "tokens": tokens, "goodput_Bps": goodput, "share": share,
            "drops": drops, "waits": statistics.median(c["waits"] for c in counters) if counters else 0,
            "escapes": sum(c["escapes"] for c in counters), "max_in_use": max((c["max_in_use"] for c in counters),
                                                                            default=0)}


def label(tokens: int | None) -> str:
    return "no throttle" if tokens is None else f"{tokens} token{'s' if tokens > 1 else ''}/node"


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--ppn", type=int, default=2)
    parser.add_argument("--link", default="200mbit")
    parser.add_argument("--queue", default="1ms")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tokens", default="1,2,4")
    parser.add_argument("--json")
    args = parser.parse_args()
    variants = [None] + [int(t) for t in args.tokens.split(",")]
    cases = [("incast", INCAST_SIZE, 4)] + [("alltoall", size, 10 if size < 1 << 20 else 3) for size in ALLTOALL_SIZES]
    runs = []
    with fabric.session(args.nodes, args.ppn, args.link, "star", PREFIX, queue=args.queue) as built:
        for repeat in range(args.repeats):
            for pattern, size, iters in cases:
                shift = repeat % len(variants)
                for tokens in variants[shift:] + variants[:shift]:
                    row = measure(pattern, size, built, tokens, iters)
                    row["repeat"] = repeat
                    runs.append(row)
                    print(f"{repeat + 1}/{args.repeats} {pattern} {size} B {label(tokens)}: "
                          f"{row['goodput_Bps'] * 8e-6:.1f} Mbit/s, {row['drops']} drops", file=sys.stderr)
    print(f"Star of {args.nodes} nodes x {args.ppn} ranks, links {args.link} with queue {args.queue} "
          f"({built.queue_bytes // 1024} KiB), MPICH/TCP; {args.repeats} interleaved repetitions, "
          f"load average {os.getloadavg()[0]:.1f} at the end.\n")
    print("| pattern | throttle | goodput Mbit/s: median (min..max) | share of ideal | drops per run (median) "
          "| token waits per rank | escapes |")
    print("|---|---|---|---|---|---|---|")
    for pattern, size, _ in cases:
        for tokens in variants:
            mine = [r for r in runs if (r["pattern"], r["bytes"], r["tokens"]) == (pattern, size, tokens)]
            rates = [r["goodput_Bps"] * 8e-6 for r in mine]
            waits = "" if tokens is None else f"{statistics.median(r['waits'] for r in mine):.0f}"
            escapes = "" if tokens is None else str(sum(r["escapes"] for r in mine))
            print(f"| {pattern} {size // 1024} KiB | {label(tokens)} | {statistics.median(rates):.1f} "
                  f"({min(rates):.1f}..{max(rates):.1f}) | {statistics.median(r['share'] for r in mine):.2f} | "
                  f"{statistics.median(r['drops'] for r in mine):.0f} | {waits} | {escapes} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(run())
