"""Digests of many simulations, to check that a change to the engine's core leaves every result bit-identical.

Run `.venv/bin/python benchmarks/engine_digests.py > before.txt` on the old engine and again after the change,
then `diff before.txt after.txt`: one line per case (collective, ranks, bytes, noise, machine model) with a hash
of every rank's finish time, the event counts, the detour time charged and, for the small cases, every
per-message record (posted, injected, arrived, matched, received times, noise and link delays). Covers all
generated collectives on small rank counts and sizes on both sides of the eager limit, every noise kind with
independent and co-scheduled phases (and per-byte noise), a torus network with flow and packet sharing, NIC
congestion curves and each admission policy; and the noise benchmark's collectives on up to 2^16 ranks.
Takes a few minutes. Not a test (it has no expected values): a tool for refactoring the engine.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

import contend
from contend.noise import write_trace

PATTERNS = ["binomial-bcast", "binomial-reduce", "dissemination", "scatter", "gather", "alltoall-linear",
            "alltoall-pairwise", "alltoall-bruck", "allreduce-recdoub", "allreduce-ring", "incast", "pingpong",
            "random-pairs", "neighbour-pairs"]
SMALL_RANKS = [1, 2, 5, 16, 33, 128]
SIZES = [1, 1000, 70_000]  # eager, eager with per-byte costs, rendezvous (S = 65535)


def noises(trace: Path) -> dict[str, object]:
    """Noise dense enough to hit the short runs of small cases (detours every few us)."""
    return {
        "none": False,
        "periodic": {"kind": "periodic", "frequency": "200kHz", "duration": "700ns", "seed": 3},
        "periodic-co": {"kind": "periodic", "frequency": "200kHz", "duration": "700ns", "phase": "1234ns"},
        "periodic-per-byte": {"kind": "periodic", "frequency": "200kHz", "duration": "700ns", "per_byte": True},
        "random": {"kind": "random", "rate": "300kHz", "duration": "900ns", "seed": 5},
        "random-co": {"kind": "random", "rate": "300kHz", "duration": "900ns", "phase": "coscheduled"},
        "trace": {"kind": "trace", "trace": str(trace)},
        "trace-co": {"kind": "trace", "trace": str(trace), "phase": "3us"},
    }


def dense_trace(path: Path) -> Path:
    """A 50 us trace of detours of 0.3-3 us, at random."""
    rng = np.random.default_rng(7)
    starts, end, kept = np.sort(rng.uniform(0, 50_000, 40)), 0, []
    for s in starts:
        length = int(rng.uniform(300, 3000))
        if s >= end and s + length <= 50_000:
            kept.append((int(s), length))
            end = s + length
    detours = pd.DataFrame({"rank": 0, "start_ns": [s for s, _ in kept], "length_ns": [x for _, x in kept]})
    write_trace(path, detours, ranks=1, duration_ns=50_000, comments=["benchmarks/engine_digests.py"])
    return path


def digest(r, records: bool) -> str:
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(r.ranks).tobytes())
    h.update(f"{r.makespan} {r.events} {r.ops} {r.messages} {r.noise_charged} {r.admission_waits} "
             f"{r.deadlock is not None}".encode())
    if records and r.record_columns is not None:
        for name in sorted(r.record_columns):
            h.update(name.encode())
            h.update(np.ascontiguousarray(r.record_columns[name]).tobytes())
    return h.hexdigest()[:16]


def run(label: str, records: bool, **kwargs) -> None:
    try:
        r = contend.simulate(records=records, **kwargs)
        print(f"{label}\t{digest(r, records)}", flush=True)
    except Exception as e:  # an error is a result too: it must stay the same
        print(f"{label}\terror: {type(e).__name__}: {e}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the 2^16-rank cases")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="contend-digests-") as scratch:
        cases = noises(dense_trace(Path(scratch) / "dense.noise"))
        for pattern in PATTERNS:
            for ranks in SMALL_RANKS:
                for size in SIZES:
                    for name, noise in cases.items():
                        run(f"{pattern} {ranks} {size} {name} loggopsim-default", True, collective=pattern,
                            ranks=ranks, bytes=size, noise=noise, seed=11)
                    run(f"{pattern} {ranks} {size} none loggops-reference", True, collective=pattern, ranks=ranks,
                        bytes=size, machine="loggops-reference")
        models = [("xt3-torus flow", {"machine": "xt3-torus", "sharing": "flow"}),
                  ("xt3-torus packet", {"machine": "xt3-torus", "sharing": "packet"}),
                  ("ib-congestion", {"machine": "ib-congestion"}),
                  ("token", {"throttle": "token:3", "ranks_per_node": 4}),
                  ("rate", {"throttle": "rate:2us", "ranks_per_node": 4}),
                  ("proxy", {"throttle": "proxy:2:3", "ranks_per_node": 4}),
                  ("ib-congestion proxy", {"machine": "ib-congestion", "throttle": "proxy:2:3"})]
        for pattern in PATTERNS:
            for ranks in (16, 64):
                for size in (1000, 70_000):
                    for label, model in models:
                        for name in ("none", "periodic", "random-co", "trace"):
                            run(f"{pattern} {ranks} {size} {name} {label}", True, collective=pattern, ranks=ranks,
                                bytes=size, noise=cases[name], seed=11, **model)
        for pattern in ("dissemination", "binomial-bcast", "allreduce-recdoub"):
            for ranks in ([1000, 4096] if args.quick else [1000, 4096, 1 << 16]):
                for name, noise in cases.items():
                    run(f"{pattern} {ranks} 1 {name} loggopsim-default", False, collective=pattern, ranks=ranks,
                        bytes=1, noise=noise)
                for name in ("periodic", "random", "trace"):
                    spec = {"periodic": "periodic:1kHz:25us", "random": "random:1kHz:25us"}.get(name)
                    noise = spec or {"kind": "trace", "trace": str(Path(scratch) / "dense.noise"), "seed": 9}
                    run(f"{pattern} {ranks} 1 {name}-bench loggopsim-default", False, collective=pattern,
                        ranks=ranks, bytes=1, noise=noise)
    return 0


if __name__ == "__main__":
    sys.exit(main())
