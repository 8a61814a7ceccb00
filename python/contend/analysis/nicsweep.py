"""Luo et al. 2012's NIC microbenchmarks (Luo et al., Luo et al. 2012, Section 4) as GOAL schedules, simulated point
by point: two nodes, every active core sends to its partner core on the other node and back.

- ``concurrency``: ``cores`` cores per node active, blocking (one message in flight per core).
- ``outstanding``: ``cores`` cores per node active, each with ``outstanding`` messages in flight: it
  posts that many, waits for all of them, and starts the next round (Figure 2 of Luo et al. 2012).
- ``random_access``: fine-grained updates (16 bytes) to random ranks on other nodes, ``outstanding``
  in flight per core (1: blocking), as HPC RandomAccess does.

Throughput is a node's bytes sent over the makespan. A sweep returns a DataFrame with the columns of
``contend.native.bench.nic.sweep_table`` (source, experiment, size, active_cores, outstanding,
throughput_Bps, msg_rate), with ``source = "engine"``. Points run in parallel (``contend.parallel``).
"""

from __future__ import annotations

import random
from contend.atomic import scratch_directory
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

COLUMNS = ("source", "experiment", "size", "active_cores", "outstanding", "throughput_Bps", "msg_rate")


@dataclass(frozen=True)
class Point:
    """One benchmark run: ``experiment`` (concurrency, outstanding, random-access) on 2 nodes of
    ``ranks_per_node`` ranks, ``cores`` active per node, ``outstanding`` per core, ``count`` messages
    per core of ``size`` bytes, under ``throttle`` (a spec or engine policy dict, None: the machine's)."""

    experiment: str
    ranks_per_node: int
    cores: int
    outstanding: int
    size: int
    count: int
    throttle: Any = None


def goal_text(p: Point, seed: int = 0) -> str:
    """The GOAL schedule of a point (rounds of ``outstanding`` sends, a zero calc between rounds)."""
    ranks = 2 * p.ranks_per_node
    active = [r for node in (0, 1) for r in range(node * p.ranks_per_node, node * p.ranks_per_node + p.cores)]
    if p.experiment == "random-access":
        rng = random.Random(seed)
        dests = {r: [(r // p.ranks_per_node ^ 1) * p.ranks_per_node + rng.randrange(p.cores) for _ in range(p.count)]
                 for r in active}
        incoming = {r: 0 for r in range(ranks)}
        for targets in dests.values():
            for d in targets:
                incoming[d] += 1
    else:
        partner = {r: (r + p.ranks_per_node) % ranks for r in active}
        dests = {r: [partner[r]] * p.count for r in active}
        incoming = {r: (p.count if r in partner else 0) for r in range(ranks)}
    window = max(1, p.outstanding)
    out = [f"num_ranks {ranks}\n"]
    for r in range(ranks):
        lines = [f"rank {r} {{\n"]
        source = -1 if p.experiment == "random-access" else (r + p.ranks_per_node) % ranks
        lines += [f"  r{j}: recv {p.size}b from {source}\n" for j in range(incoming[r])]
        for j, d in enumerate(dests.get(r, ())):
            lines.append(f"  s{j}: send {p.size}b to {d}\n")
            if j >= window and j % window == 0:
                k = j // window
                lines.append(f"  w{k}: calc 0\n")
                lines += [f"  w{k} requires s{i}\n" for i in range(j - window, j)]
            if j >= window:
                lines.append(f"  s{j} requires w{j // window}\n")
        lines.append("}\n")
        out += lines
    return "".join(out)


def run_point(machine: Any, p: Point) -> dict[str, Any]:
    """Simulate one point; its row of the sweep table."""
    from contend.simulation.simulate import simulate

    with scratch_directory("contend-nic-") as tmp:
        path = Path(tmp) / "point.goal"
        path.write_text(goal_text(p), encoding="utf-8")
        r = simulate(path, machine=machine, throttle=p.throttle)
    if r.deadlock is not None:
        raise RuntimeError(f"{p}: the benchmark deadlocked")
    seconds = r.makespan * 1e-9
    messages = p.cores * p.count  # per node
    return {"source": "engine", "experiment": p.experiment, "size": p.size, "active_cores": p.cores,
            "outstanding": p.outstanding, "throughput_Bps": messages * p.size / seconds,
            "msg_rate": messages / seconds, "makespan_ns": float(r.makespan),
            "admission_waits": r.admission_waits}


def _run_star(args):
    return run_point(*args)


def sweep(machine: Any, points: Sequence[Point], *, workers: int | None = None,
          progress: Callable[[int, int], None] | None = None):
    """Simulate ``points``; a DataFrame in their order, shared out by ``contend.parallel.parallel_map``
    (MPI ranks under mpiexec, else ``workers`` local processes)."""
    import pandas as pd

    from contend.parallel import parallel_map

    return pd.DataFrame(parallel_map(_run_star, [(machine, p) for p in points], workers=workers, progress=progress))


def core_steps(ranks_per_node: int, step: int) -> list[int]:
    """1, 2, then every ``step`` cores up to all of them."""
    return sorted({1, 2, *range(step, ranks_per_node + 1, step), ranks_per_node} & set(range(1, ranks_per_node + 1)))


def powers_of_two(limit: int) -> list[int]:
    return [2**k for k in range(limit.bit_length()) if 2**k <= limit]


def concurrency_points(rpn: int, sizes: Iterable[int], step: int, count: int, throttle: Any = None) -> list[Point]:
    return [Point("concurrency", rpn, c, 1, s, count, throttle) for s in sizes for c in core_steps(rpn, step)]


def outstanding_points(rpn: int, sizes: Iterable[int], cores: Iterable[int], max_outstanding: int, count: int,
                       throttle: Any = None) -> list[Point]:
    return [Point("outstanding", rpn, c, d, s, max(count, d), throttle)
            for s in sizes for c in cores for d in powers_of_two(max_outstanding)]
