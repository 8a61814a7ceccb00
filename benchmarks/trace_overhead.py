"""Overhead of libcontend-trace.so on small-message latency and message rate, with its noise.

    .venv/bin/python benchmarks/trace_overhead.py [--repeats 10] [--iters 2000] [--cpu] [--fabric]
        [--benchmarks pingpong,msgrate] [--json FILE]

Two runs of contend-bench on 2 ranks of this host's shared memory, 8-byte messages:

    pingpong   half round trip (latency): the median over the timed iterations
    msgrate    time per message, a sender streaming windows of 64 nonblocking sends (message rate)

each in four variants, interleaved and rotated (contend.native.bench.overhead):

    none          no LD_PRELOAD                                (the baseline)
    none-again    no LD_PRELOAD, a second time                 (the noise floor: baseline vs itself)
    trace         LD_PRELOAD libcontend-trace.so, the default (the call site only, depth 1, timestamps
                  from the time-stamp counter)
    trace-monotonic  the same with clock_gettime(CLOCK_MONOTONIC) timestamps (CONTEND_TRACE_CLOCK)
    trace-depth4  the call site and three callers (an unwind with backtrace() per call)

With --fabric (root, iproute2) the two ranks run instead on two nodes of an emulated fabric (network
namespaces, TCP over veth, links shaped to 1 Gbit/s; prefix ctdto-, removed afterwards): the latency
of a network rather than of shared memory.

--cpu adds the tracer's CPU cost per call, which a busy host does not blur: trace-cost (one rank, 8
bytes to itself, Irecv + Send + Wait and Irecv + Isend + Waitall, 3 calls per iteration) reads its own
thread CPU time around 100000 iterations, interleaved with and without the tracer.

A run's figure is its median iteration and, separately, its best window (other jobs on a shared host
only ever add time, so the best window is the steadier figure when the host is busy). The tracer's
buffer holds every call of a run (no drops). Target: at most 2% (the seed's tool: 1-5%).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np

from contend.native import mpi
from contend.native.bench.overhead import BASELINE, NOISE, interleaved, overhead_table
from contend.native.bench.runner import run_benchmark

TARGET = 0.02
STATISTICS = {"median": "t_p50_ns", "best window": "t_min_ns"}
BENCHMARKS = {"pingpong": {}, "msgrate": {"window": 64}}
FABRIC_PREFIX = "ctdto-"
VARIANTS = {BASELINE: None, NOISE: None, "trace": (1, "tsc"), "trace-monotonic": (1, "monotonic"),
            "trace-depth4": (4, "tsc")}


@contextlib.contextmanager
def traced(setting: tuple[int, str] | None, records: int):
    """The environment the ranks inherit: the tracer preloaded (depth and clock given) or nothing."""
    if setting is None:
        yield
        return
    depth, clock = setting
    directory = tempfile.mkdtemp(prefix="contend-trace-overhead-")
    saved = {k: os.environ.get(k) for k in ("LD_PRELOAD", "CONTEND_TRACE_DIR", "CONTEND_TRACE_DEPTH",
                                             "CONTEND_TRACE_RECORDS", "CONTEND_TRACE_CLOCK")}
    os.environ.update(LD_PRELOAD=str(mpi.trace_library(mpi.find_mpi())), CONTEND_TRACE_DIR=directory,
                      CONTEND_TRACE_DEPTH=str(depth), CONTEND_TRACE_RECORDS=str(records),
                      CONTEND_TRACE_CLOCK=clock)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(directory, ignore_errors=True)


def measure(benchmark: str, setting: tuple[int, str] | None, iters: int, built) -> dict[str, float]:
    window = BENCHMARKS[benchmark].get("window", 1)
    records = 4 * (iters + iters // 10 + 100) * window + 100000  # every call of the run fits
    with traced(setting, records):
        run = run_benchmark(benchmark, ranks=2, sizes=[8], iters=iters, warmup=max(iters // 10, 10),
                            options=BENCHMARKS[benchmark], fabric=built, timeout_s=300)
    return {column: float(run.results[column].iloc[0]) for column in STATISTICS.values()}


def cpu_cost(repeats: int) -> dict:
    """CPU ns per call the tracer adds (trace-cost), per clock, as medians over interleaved runs."""
    import json as json_module
    import subprocess

    library = mpi.find_mpi()
    program = [str(library.mpiexec), "-n", "1", str(mpi.build_dir(library) / "trace-cost"), "100000"]

    def once(setting):
        with traced(setting, 700000):
            out = subprocess.run(program, capture_output=True, text=True, timeout=300, check=True).stdout
        return json_module.loads(out[out.index("{"):out.index("}") + 1])

    settings = {BASELINE: None, "trace": (1, "tsc"), "trace-monotonic": (1, "monotonic")}
    samples = interleaved({name: (lambda s=setting: once(s)) for name, setting in settings.items()}, repeats,
                          lambda r: f"{r['blocking_ns']:.1f}/{r['nonblocking_ns']:.1f} ns")
    print(f"\n## CPU cost per call (trace-cost, 1 rank, {repeats} interleaved repetitions, load average "
          f"{os.getloadavg()[0]:.2f})\n")
    print("| variant | Irecv+Send+Wait: CPU ns per iteration | Irecv+Isend+Waitall | added per call |")
    print("|---|---|---|---|")
    medians = {name: {loop: float(np.median([r[loop] for r in runs])) for loop in ("blocking_ns", "nonblocking_ns")}
               for name, runs in samples.items()}
    for name, m in medians.items():
        added = "" if name == BASELINE else \
            f"{np.mean([(m[k] - medians[BASELINE][k]) / 3 for k in m]):.1f} ns"
        print(f"| {name} | {m['blocking_ns']:.1f} | {m['nonblocking_ns']:.1f} | {added} |")
    return {"samples": samples, "medians": medians}


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--iters", type=int, default=2000, help="timed iterations (msgrate: windows) per run")
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS), help="which of pingpong,msgrate")
    parser.add_argument("--fabric", action="store_true", help="two nodes of an emulated fabric instead of shared memory")
    parser.add_argument("--cpu", action="store_true", help="also the CPU cost per call (trace-cost)")
    parser.add_argument("--json", help="also write the samples and the summary to this file")
    args = parser.parse_args()
    args.benchmarks = [b for b in args.benchmarks.split(",") if b]
    unknown = set(args.benchmarks) - set(BENCHMARKS)
    if unknown:
        parser.error(f"--benchmarks: unknown {', '.join(sorted(unknown))}")
    library = mpi.find_mpi()
    mpi.build_native(library)
    cpu = cpu_cost(args.repeats) if args.cpu else None
    if args.fabric:
        from contend.native import fabric

        with fabric.session(2, 1, "1gbit", "star", FABRIC_PREFIX) as built:
            return measure_all(args, "2 nodes of the emulated fabric (TCP, 1 Gbit/s)", cpu, built)
    return measure_all(args, "shared memory", cpu, None)


def measure_all(args, where: str, cpu: dict | None, built) -> int:
    rng = np.random.default_rng(1)
    report: dict[str, dict] = {}
    for benchmark in args.benchmarks:
        samples = interleaved(
            {name: (lambda b=benchmark, s=setting: measure(b, s, args.iters, built)) for name, setting in VARIANTS.items()},
            args.repeats, lambda r: f"{r['t_p50_ns']:.1f} ns")
        load = os.getloadavg()[0]
        print(f"\n## {benchmark}, 2 ranks on {where}, 8 B, {args.iters} iterations per run, {args.repeats} interleaved "
              f"repetitions (load average {load:.2f} at the end)")
        summary = {}
        for statistic, column in STATISTICS.items():
            print(f"\nEach run's {statistic}, ns:\n")
            values = {name: [r[column] for r in samples[name]] for name in VARIANTS}
            summary[statistic] = overhead_table(values, "ns", rng)
            noise = summary[statistic][NOISE]
            print(f"\ntracer (depth 1) overhead {100 * summary[statistic]['trace']['overhead']:+.2f}% (target at "
                  f"most {100 * TARGET:.0f}%); the baseline against itself {100 * noise['overhead']:+.2f}% "
                  f"({100 * noise['overhead_low']:+.2f}% .. {100 * noise['overhead_high']:+.2f}%)")
        report[benchmark] = {"samples_ns": samples, "summary": summary, "load": load}
    if args.json:
        with open(args.json, "w") as out:
            json.dump({**report, "cpu_cost": cpu, "where": where, "iters": args.iters, "repeats": args.repeats}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(run())
