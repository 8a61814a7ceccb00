"""Mapping cost, whole process: `contend map` of a 3D stencil on a 3D torus, each time beside its target.

Run with `make bench` (or `.venv/bin/python benchmarks/mapping.py [--quick]`).

- 4096 ranks on a 16x16x16 torus (target: under 10 s) and 65,536 ranks on a 32x32x64 torus (target: under
  120 s; `--quick` leaves it out), one rank per node. The stencil's process grid has the torus's shape, and
  its rank numbers are shuffled (seeded), so that the natural order gives nothing away: the block placement
  of the shuffled job is poor and a method must find the grid again. The optimum puts every neighbour one
  hop away: hop-bytes equal to the bytes (hops per byte 1).
- `contend map APP.goal --machine M --method NAME --no-simulate --json -o DIR` as one process per method
  (start-up, reading the schedule, the graph, the placement, its objective and the files written), for
  topo (the target's method), metis, and block as the reference. The simulated makespan is left out: it
  is the engine's speed, which benchmarks/engine_speed.py measures.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from rich import box
from rich.console import Console

from contend.report.terminal import Table

HALO = 4096  # bytes to each of the six neighbours
CASES = (((16, 16, 16), 10.0), ((32, 32, 64), 120.0))  # torus shape = process grid, target seconds
METHODS = ("topo", "metis", "block")
TARGET_METHOD = "topo"
MACHINE = """[machine]
name = "torus-{shape}"
description = "a {shape} torus for the mapping benchmark"

[loggops]
L = "1us"
o = "1us"
g = "1us"
G = "425MB/s"
O = "0ns"
S = 1200

[topology]
kind = "torus"
dims = [{dims}]
ranks_per_node = 1
link_bandwidth = "425MB/s"
hop_latency = "50ns"
"""


def contend_command() -> list[str]:
    found = shutil.which("contend")
    return [found] if found else [sys.executable, "-m", "contend.cli"]


def write_stencil(path: Path, dims: tuple[int, int, int], seed: int = 0) -> None:
    """A periodic 3D halo exchange on a process grid of shape `dims` whose ranks are renumbered by a seeded
    random permutation: grid point p runs as rank label[p]."""
    x_, y_, z_ = dims
    ranks = x_ * y_ * z_
    label = np.random.default_rng(seed).permutation(ranks)
    grid = np.arange(ranks)
    x, y, z = grid % x_, grid // x_ % y_, grid // (x_ * y_)

    def at(dx, dy, dz):
        return label[(x + dx) % x_ + x_ * ((y + dy) % y_ + y_ * ((z + dz) % z_))]

    steps = ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1))
    to = [at(*step) for step in steps]
    back = [at(-dx, -dy, -dz) for dx, dy, dz in steps]
    body = [""] * ranks
    for p in range(ranks):
        ops = "".join(f"s{t}: send {HALO}b to {to[t][p]} tag {t}\nr{t}: recv {HALO}b from {back[t][p]} tag {t}\n"
                      for t in range(len(steps)))
        body[label[p]] = f"rank {label[p]} {{\n{ops}}}\n"
    with open(path, "w") as out:
        out.write(f"num_ranks {ranks}\n")
        out.writelines(body)


def run_map(goal: Path, machine: Path, method: str, out: Path, timeout: float) -> tuple[float, dict]:
    """Wall seconds of one `contend map` process and its mapping.json."""
    command = [*contend_command(), "map", str(goal), "--machine", str(machine), "--method", method,
               "--no-simulate", "--json", "-o", str(out)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}: {done.stderr.strip()}")
    return wall, json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the 4096-rank case only")
    parser.add_argument("--work", help="directory for the schedules (default: a temporary one, deleted)")
    args = parser.parse_args()
    cases = CASES[:1] if args.quick else CASES
    table = Table(title="contend map, whole process (3D stencil, shuffled ranks, on a torus of its shape; "
                        "hops/B: hop-bytes over bytes)", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for column in ("ranks", "torus", "method", "wall s", "target s", "hops/B", "max link B"):
        table.add_column(column, justify="left" if column in ("torus", "method") else "right", no_wrap=True)
    failed = False
    with tempfile.TemporaryDirectory(prefix="contend-bench-map-", dir=args.work) as scratch:
        work = Path(scratch)
        for dims, target in cases:
            shape = "x".join(map(str, dims))
            ranks = int(np.prod(dims))
            goal = work / f"stencil-{shape}.goal"
            machine = work / f"torus-{shape}.toml"
            machine.write_text(MACHINE.format(shape=shape, dims=", ".join(map(str, dims))))
            write_stencil(goal, dims)
            for method in METHODS:
                wall, summary = run_map(goal, machine, method, work / f"map-{shape}-{method}", timeout=20 * target)
                score = summary["methods"][0]["objective"]
                timed = method == TARGET_METHOD
                failed |= timed and wall >= target
                table.add_row(f"{ranks:,}", shape, method, f"{wall:.2f}", f"{target:g}" if timed else "-",
                              f"{score['hop_bytes'] / score['bytes']:.3f}", f"{score['max_link_load']:,.0f}")
            goal.unlink()
    console = Console(width=80)
    console.print(table)
    console.print(f"target: {TARGET_METHOD} under the target time; hop-bytes / bytes = 1 is the optimum "
                  "(every neighbour one hop away)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
