"""Shares of shaped links on the emulated fabric (root), as Markdown.

    python benchmarks/measure_fabric.py [--link 1gbit] [--repeats 3]

Star of 4 nodes, 1 rank each: one flow, 3 senders into one receiver (incast), 2 disjoint pairs.
Line of 4 routers: Bhatele's Benchmark III, pairs 1 hop apart (separate links) vs 2 hops apart
(both cross the middle link), 1 MiB ping-pong.
"""

from __future__ import annotations

import argparse
import sys

from contend.native import fabric
from contend.native.bench.runner import run_benchmark

PREFIX = "ctdm-"


def stream(built: fabric.Fabric, name: str, ranks: int) -> list[float]:
    run = run_benchmark(name, ranks=ranks, sizes=[65536], iters=5, warmup=1, options={"window": 128},
                        fabric=built, timeout_s=300)
    return [float(x) * 8 / 1e9 for x in run.results.sort_values("rank")["bandwidth_Bps"]]


def hops(built: fabric.Fabric, n: int) -> float:
    run = run_benchmark("hops", ranks=4, sizes=[1 << 20], iters=5, warmup=1, options={"hops": n},
                        fabric=built, timeout_s=300)
    return float(run.results["t_p50_ns"].mean()) / 1e6


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--link", default="1gbit")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    link = fabric.parse_link_rate(args.link) / 1e9
    print(f"Links {args.link} (tbf rate, burst {fabric.TBF_BURST}, latency {fabric.TBF_LATENCY}); Gbit/s per flow")
    print()
    print("| run | pattern | flows (Gbit/s) | share of the link |")
    print("|---|---|---|---|")
    with fabric.session(4, 1, args.link, "star", PREFIX) as built:
        for repeat in range(args.repeats):
            for label, name, ranks in (("1 flow", "msgrate", 2), ("3 into 1", "incast", 4),
                                       ("2 disjoint pairs", "msgrate", 4)):
                flows = stream(built, name, ranks)
                shares = [f / sum(flows) if name == "incast" else f / link for f in flows]
                print(f"| {repeat + 1} | {label} | {' / '.join(f'{f:.3f}' for f in flows)} | "
                      f"{' / '.join(f'{s:.2f}' for s in shares)} |")
    print()
    print("| run | Benchmark III on a line of 4 routers, 1 MiB | one-way latency (ms) |")
    print("|---|---|---|")
    with fabric.session(4, 1, args.link, "line", PREFIX) as built:
        for repeat in range(args.repeats):
            near, far = hops(built, 1), hops(built, 2)
            print(f"| {repeat + 1} | pairs 1 hop apart / 2 hops apart (share r1-r2) | {near:.2f} / {far:.2f} "
                  f"(x{far / near:.2f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(run())
