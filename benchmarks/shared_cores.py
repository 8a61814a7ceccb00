"""Shared cores, measured against the model: collectives and a ping-pong loop with more ranks than cores.

    .venv/bin/python benchmarks/shared_cores.py --machine this-host.toml [--calls 50]

The machine file comes from `contend bench fit` (its `[cores]`: docs/measure.md). For each MPI call
(Barrier, Bcast, Allreduce, Allgather, Alltoall, an 8-byte ping-pong, and the ping-pong with 20 us of
work before each reply) and each setting (2 ranks pinned to one core; 4 ranks on the host's cores,
unpinned): the measured time per call on rank 0 (median
of --runs runs of N calls: --calls, 40 times more for the calls that are not spinning collectives), then
traced runs of N and 2N calls converted with `--algorithms mpich` and `mpich-shm`
and simulated with the machine's switch and quantum on the setting's cores, and with a core per rank;
the model's time per call is the difference of the two makespans / N, so that the program's start (its
first barrier, outside the measured loop) cancels. Times per call in microseconds; the load average
before and after. docs/measurements.md, "Shared cores", has a run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console

from contend.native import mpi
from contend.report.terminal import Table

# Each call, and how many of it a run makes: the spinning collectives take milliseconds each on shared
# cores; the others are many, so that the program's start (a few ticks) is small beside them.
CALLS = {
    "Barrier": ("MPI_Barrier(MPI_COMM_WORLD)", 1),
    "Bcast": ("MPI_Bcast(a, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD)", 1),
    "Allreduce": ("MPI_Allreduce(a, b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD)", 1),
    "Allgather": ("MPI_Allgather(a, 1, MPI_DOUBLE, b, 1, MPI_DOUBLE, MPI_COMM_WORLD)", 40),
    "Alltoall": ("MPI_Alltoall(a, 1, MPI_DOUBLE, b, 1, MPI_DOUBLE, MPI_COMM_WORLD)", 40),
    "ping-pong": ("if (rank < 2) { if (rank == 0) { MPI_Send(a, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD); "
                 "MPI_Recv(b, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); } else { "
                 "MPI_Recv(b, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); "
                 "MPI_Send(a, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD); } }", 40),
    # the same with 20 us of work (a spin on the clock) before each reply: on one core the waiting rank
    # takes as long a turn (docs/models.md, "Fair share")
    "ping-pong+20us": ("if (rank < 2) { if (rank == 0) { MPI_Send(a, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD); "
                      "MPI_Recv(b, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); } else { "
                      "MPI_Recv(b, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); "
                      "double until = MPI_Wtime() + 20e-6; while (MPI_Wtime() < until) {} "
                      "MPI_Send(a, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD); } }", 40),
}
PROGRAM = """#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, calls = atoi(argv[1]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double a[64] = {1}, b[64];
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int i = 0; i < calls; i++) { CALL; }
    double took = MPI_Wtime() - start;
    if (rank == 0) printf("%.3f\\n", took * 1e6 / calls);
    MPI_Finalize();
    return 0;
}
"""
SETTINGS = {"2 on 1": (2, "0", 1), "4 on 2": (4, None, 2)}  # ranks on cores: (ranks, pinned to, cores)


def load() -> float:
    return os.getloadavg()[0]


def build(name: str, call: str, scratch: Path, library) -> Path:
    source = scratch / f"{name}.c"
    source.write_text(PROGRAM.replace("CALL", call))
    binary = scratch / name
    subprocess.run([str(library.mpicc), "-O2", str(source), "-o", str(binary)], check=True)
    return binary


def launch(library, ranks: int, cpus: str | None, program: list[str]) -> list[str]:
    argv, _ = mpi.launch_command(library, ranks, (["taskset", "-c", cpus] if cpus else []) + program, None)
    return argv


def makespan_us(goal: Path, machine: str, cores: str, ranks: int) -> float:
    argv = [sys.executable, "-m", "contend.cli", "sim", str(goal), "--machine", machine, "--json", "--cores", cores,
            "--ranks-per-node", str(ranks)]
    return json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)["makespan"] / 1000


def model_per_call(traces: dict[int, Path], preset: str, machine: str, cores: str, ranks: int, scratch: Path) -> float:
    """(makespan of 2N calls - of N calls) / N, each converted with ``preset``."""
    spans = {}
    for calls, trace in traces.items():
        goal = scratch / f"{trace.name}-{preset}.goal"
        subprocess.run([sys.executable, "-m", "contend.cli", "goal", "convert", str(trace), "-o", str(goal),
                        "--algorithms", preset], check=True, capture_output=True)
        spans[calls] = makespan_us(goal, machine, cores, ranks)
    low, high = sorted(spans)
    return (spans[high] - spans[low]) / (high - low)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machine", required=True, help="machine file with [cores] (contend bench fit)")
    parser.add_argument("--calls", type=int, default=50,
                        help="calls per run of the spinning collectives, 40 times that of the others (default 50)")
    parser.add_argument("--runs", type=int, default=3, help="measured runs per case (default 3)")
    args = parser.parse_args()
    from contend.machine.file import load_machine

    shared = (load_machine(args.machine).node or {}).get("cores")
    if not shared:
        parser.error(f"{args.machine} has no [cores] table (contend bench fit writes one)")
    library = mpi.find_mpi()
    console = Console()
    before = load()
    table = Table(title="time per call (us): measured, and the model with shared cores (mpich, mpich-shm) and "
                        "with a core per rank")
    for column in ("call", "setting", "measured", "range", "mpich", "shm", "own cores"):
        table.add_column(column, justify="left" if column in ("call", "setting") else "right")
    with tempfile.TemporaryDirectory(prefix="contend-cores-") as scratch:
        scratch = Path(scratch)
        for name, (call, times_calls) in CALLS.items():
            binary = build(name, call, scratch, library)
            calls = times_calls * args.calls
            for setting, (ranks, cpus, per_node) in SETTINGS.items():
                argv = launch(library, ranks, cpus, [str(binary), str(calls)])
                times = [float(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)
                         for _ in range(args.runs)]
                traces = {}
                for n in (calls, 2 * calls):
                    traces[n] = scratch / f"{name}-{ranks}-{n}"
                    run = launch(library, ranks, cpus, [str(binary), str(n)])
                    subprocess.run([sys.executable, "-m", "contend.cli", "trace", "-o", str(traces[n]), "--", *run],
                                   check=True, capture_output=True)
                cores = f"{per_node}:{shared['switch']}ps:{shared['quantum']}ps"
                models = [model_per_call(traces, preset, args.machine, cores, ranks, scratch)
                          for preset in ("mpich", "mpich-shm")]
                plain = model_per_call(traces, "mpich", args.machine, "none", ranks, scratch)
                table.add_row(name, setting, f"{statistics.median(times):.1f}",
                              f"{min(times):.1f}..{max(times):.1f}", f"{models[0]:.1f}", f"{models[1]:.1f}",
                              f"{plain:.1f}")
                console.print(f"{name}, {setting}: done", style="dim")
    console.print(table)
    console.print(f"load average {before:.2f} before, {load():.2f} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
