"""The seed's NIC congestion microbenchmarks, real: do throughput and message rate fall with more active
cores (Figure 1) or more messages in flight per core (Figure 2) on this host and on the emulated fabric,
and what do the all-to-all variants and RandomAccess-like updates do? Prints Markdown tables; --json
keeps every run (results rows and meta, load average included).

    .venv/bin/python benchmarks/nic_congestion.py [--part shm|fabric|all] [--repeats 3] [--json FILE]

Parts (contend-bench, pip MPICH):
  shm     this host's shared memory, the two halves of the ranks as two nodes: outstanding with 2 ranks
          (one per half, no time slicing), nicrate and outstanding with 4 ranks (2 per half, 4 ranks
          on 2 cores), the four all-to-alls and randomaccess with 4 ranks
  fabric  (root) a star of 2 nodes x 2 ranks, links at --link with a --queue tbf queue, MPICH over
          TCP: nicrate (1 and 8 in flight), outstanding, each also under libcontend-throttle.so (token
          policy, --tokens per node, one per message), the four all-to-alls; tbf drops per run
Each configuration runs --repeats times, interleaved; tables give the median over the runs of each
point's node throughput (min..max over the runs) and the 1-minute load average at each run's start.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import pandas as pd

from contend.native import fabric, libthrottle
from contend.native.bench.nic import sweep_table
from contend.native.bench.runner import run_benchmark

PREFIX = "ctnic-"
SHM_SIZES = (8, 256, 8192, 262144)
FABRIC_SIZES = (1024, 8192, 65536, 262144)
ALLTOALLS = ("alltoall", "alltoall-pairwise", "alltoall-bruck", "alltoall-mpi")


def one_run(name: str, label: str, *, built: fabric.Fabric | None = None, tokens: int | None = None,
            **kwargs) -> dict:
    """One benchmark run as a plain record (rows, meta, drops, throttle counters)."""
    with tempfile.TemporaryDirectory(prefix="contend-nic-") as scratch:
        stats = Path(scratch) / "stats.jsonl"
        variables = None
        if tokens is not None:
            variables = libthrottle.settings("token", tokens=tokens, stall_ms=1000, stats=stats)
        before = fabric.dropped_packets(built) if built else 0
        run = run_benchmark(name, fabric=built, timeout_s=900, throttle=variables, **kwargs)
        drops = fabric.dropped_packets(built) - before if built else 0
        counters = libthrottle.read_stats(stats)
    return {"name": name, "label": label, "tokens": tokens, "drops": drops,
            "load": run.meta.get("loadavg_1min"), "meta": run.meta,
            "rows": run.results.to_dict("records"),
            "waits": statistics.median(c["waits"] for c in counters) if counters else None,
            "escapes": sum(c["escapes"] for c in counters) if counters else None}


def interleaved(configs: list[tuple[str, dict]], repeats: int) -> list[dict]:
    """Every configuration once per repetition, the order rotated each time."""
    records = []
    for repeat in range(repeats):
        shift = repeat % len(configs)
        for label, kwargs in configs[shift:] + configs[:shift]:
            print(f"  [{repeat + 1}/{repeats}] {label}", file=sys.stderr, flush=True)
            records.append(one_run(label=label, **kwargs))
    return records


def size_text(n: int) -> str:
    return f"{n // 1024} KiB" if n >= 1024 else f"{n} B"


def rate(bps: float) -> str:
    return f"{bps / 1e9:.2f} GB/s" if bps >= 1e9 else f"{bps / 1e6:.2f} MB/s" if bps >= 1e6 else f"{bps / 1e3:.1f} kB/s"


def sweep_summary(records: list[dict], label: str, experiment: str) -> str:
    """Markdown: per size, node throughput against the swept axis (median over runs, min..max)."""
    runs = [r for r in records if r["label"] == label]
    tables = [sweep_table(pd.DataFrame(r["rows"])).assign(run=i) for i, r in enumerate(runs)]
    table = pd.concat(tables)
    axis = "active_cores" if experiment == "concurrency" else "outstanding"
    fixed = "outstanding" if axis == "active_cores" else "active_cores"
    loads = ", ".join(f"{r['load']:.1f}" for r in runs)
    drops = [r["drops"] for r in runs]
    lines = [f"**{label}** ({len(runs)} runs; load average {loads}"
             + (f"; tbf drops per run {statistics.median(drops):.0f} (median)" if any(drops) else "") + ")", "",
             f"| size | {fixed.replace('_', ' ')} | " + " | ".join(
                 f"{axis.replace('_', ' ')} {v}" for v in sorted(table[axis].unique())) + " | last / best |",
             "|---" * (3 + table[axis].nunique()) + "|"]
    for (size, other), group in table.groupby(["size", fixed]):
        cells, medians = [], []
        for value in sorted(table[axis].unique()):
            values = group.loc[group[axis] == value, "throughput_Bps"]
            if values.empty:
                cells.append("")
                continue
            medians.append(values.median())
            cells.append(f"{rate(values.median())} ({rate(values.min())}..{rate(values.max())})")
        lines.append(f"| {size_text(size)} | {other} | " + " | ".join(cells) + f" | {medians[-1] / max(medians):.2f} |")
    return "\n".join(lines)


def alltoall_summary(records: list[dict], title: str) -> str:
    """Markdown: per variant and size, the median (over runs) of the slowest rank's exchange time."""
    lines = [f"**{title}** (slowest rank's median all-to-all in us, median over runs; effective bandwidth of "
             "all ranks)", "", "| variant | " + " | ".join(size_text(s) for s in sorted({row["bytes"] for r in records
                                                                                       for row in r["rows"]})) + " |",
             "|---" * (1 + len({row["bytes"] for r in records for row in r["rows"]})) + "|"]
    for name in ALLTOALLS:
        runs = [pd.DataFrame(r["rows"]) for r in records if r["name"] == name]
        if not runs:
            continue
        cells = []
        for size in sorted(runs[0]["bytes"].unique()):
            slowest = [run.loc[run["bytes"] == size, "alltoall_ns"].max() for run in runs]
            bandwidth = [run.loc[run["bytes"] == size, "bandwidth_Bps"].sum() for run in runs]
            cells.append(f"{statistics.median(slowest) / 1e3:.1f} us, {rate(statistics.median(bandwidth))}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    loads = ", ".join(f"{r['load']:.1f}" for r in records)
    return "\n".join(lines + ["", f"load average at the runs' start: {loads}"])


def updates_summary(records: list[dict], title: str) -> str:
    lines = [f"**{title}** (updates/s of all ranks, median over runs; wrong table words)", "",
             "| size | in flight | updates/s | wrong words |", "|---|---|---|---|"]
    frames = [pd.DataFrame(r["rows"]) for r in records]
    for (size, window) in sorted({(row["bytes"], row["window"]) for f in frames for _, row in f.iterrows()}):
        totals = [f.loc[(f["bytes"] == size) & (f["window"] == window), "msg_rate"].sum() for f in frames]
        wrong = sum(int(f.loc[(f["bytes"] == size) & (f["window"] == window), "errors"].sum()) for f in frames)
        lines.append(f"| {size} B | {window} | {statistics.median(totals) / 1e6:.2f} M | {wrong} |")
    loads = ", ".join(f"{r['load']:.1f}" for r in records)
    return "\n".join(lines + ["", f"load average at the runs' start: {loads}"])


def shm_part(repeats: int) -> tuple[list[dict], list[str]]:
    nic = {"messages": 64}
    configs = [
        ("shm outstanding, 2 ranks", dict(name="outstanding", ranks=2, sizes=SHM_SIZES, iters=50, options=nic)),
        ("shm nicrate, 4 ranks", dict(name="nicrate", ranks=4, sizes=SHM_SIZES, iters=50, options=nic)),
        ("shm outstanding, 4 ranks", dict(name="outstanding", ranks=4, sizes=SHM_SIZES, iters=50, options=nic)),
    ]
    records = interleaved(configs, repeats)
    a2a = interleaved([(name, dict(name=name, ranks=4, sizes=(8, 1024, 65536), iters=50)) for name in ALLTOALLS],
                      repeats)
    gups = interleaved([("shm randomaccess", dict(name="randomaccess", ranks=4, sizes=(16,), iters=200,
                                                  options={"windows": "1,4,16,64"}))], repeats)
    text = [sweep_summary(records, "shm outstanding, 2 ranks", "outstanding"),
            sweep_summary(records, "shm nicrate, 4 ranks", "concurrency"),
            sweep_summary(records, "shm outstanding, 4 ranks", "outstanding"),
            alltoall_summary(a2a, "shared memory, 4 ranks"), updates_summary(gups, "shared memory, 4 ranks")]
    return records + a2a + gups, text


def fabric_part(repeats: int, link: str, queue: str, tokens: int) -> tuple[list[dict], list[str]]:
    nic = {"messages": 32}
    with fabric.session(2, 2, link, "star", PREFIX, queue) as built:
        common = dict(ranks=4, sizes=FABRIC_SIZES, iters=5, warmup=1, built=built)
        configs = []
        for throttled in (None, tokens):
            suffix = "" if throttled is None else f", {throttled} token{'s' if throttled > 1 else ''}/node"
            configs += [(f"fabric nicrate{suffix}", dict(name="nicrate", options={**nic, "windows": "1,8"},
                                                         tokens=throttled, **common)),
                        (f"fabric outstanding{suffix}", dict(name="outstanding", options=nic, tokens=throttled,
                                                             **common))]
        records = interleaved(configs, repeats)
        a2a = interleaved([(name, dict(name=name, ranks=4, sizes=(8, 1024, 65536), iters=10, warmup=1,
                                       built=built)) for name in ALLTOALLS], repeats)
    text = [f"Fabric: star, 2 nodes x 2 ranks, links {link}, queue {queue}"]
    for label, experiment in (("fabric nicrate", "concurrency"), ("fabric outstanding", "outstanding")):
        text.append(sweep_summary(records, label, experiment))
        text.append(sweep_summary(records, f"{label}, {tokens} token{'s' if tokens > 1 else ''}/node", experiment))
    throttled = [r for r in records if r["tokens"] is not None]
    text.append(f"throttled runs: token waits per rank (median of runs' medians) "
                f"{statistics.median(r['waits'] for r in throttled):.0f}, stall escapes {sum(r['escapes'] for r in throttled)}")
    text.append(alltoall_summary(a2a, f"fabric 2 x 2, {link}, queue {queue}"))
    return records + a2a, text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("shm", "fabric", "all"), default="all")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--link", default="200mbit")
    parser.add_argument("--queue", default="1ms")
    parser.add_argument("--tokens", type=int, default=2, help="throttled fabric runs: tokens per node")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()
    records, text = [], []
    if args.part in ("shm", "all"):
        more, lines = shm_part(args.repeats)
        records, text = records + more, text + lines
    if args.part in ("fabric", "all"):
        more, lines = fabric_part(args.repeats, args.link, args.queue, args.tokens)
        records, text = records + more, text + lines
    print("\n\n".join(text))
    if args.json:
        Path(args.json).write_text(json.dumps(records, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
