"""``contend whatif``: one schedule simulated over the cross product of what-if axes (network and CPU
speed, overheads, noise, ranks, machine, placement, NIC curves, throttling), with a table, JSON and an
HTML report of the run time against each axis (contend.analysis.whatif, contend.report.whatif)."""

from __future__ import annotations

import argparse

from contend.commands.options import add_collective_options
from contend.errors import UserError

# As contend sim: a deadlocked run is a result (its outputs are written), not an input error.
EXIT_DEADLOCK = 3


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "whatif", help="simulate a schedule over what-if axes (network, CPU, overheads, noise, ranks, ...)",
        description="Simulate a GOAL schedule (or a generated collective) once per combination of the --vary "
        "axes (their cross product; the first combination is the reference) and write DIR/whatif.json and "
        "DIR/index.html with the run time against each axis. Axes: network=0.1x,1x,10x (L, g, G and the "
        "links' bandwidth and latency scaled by the speed), cpu=0.5x,1x,2x (calc times divided by the speed), "
        "overhead=0,1x,g (o and O scaled; 0: full overlap; g: o = g, O = G), noise=none,periodic:1kHz:25us,"
        "trace:FILE (contend sim's --noise specs), noise-phase=independent,coscheduled, ranks=64,1024 "
        "(generated collectives, or a trace extrapolated), machine=A,B (machine files or presets), placement=block,cyclic, "
        "ranks-per-node=8,32, nic=on,off (the machine's [nic] curves), throttle=none,token:20,rate:2us. Runs are shared among "
        "MPI ranks under mpiexec, among local processes otherwise. docs/models.md, 'What-if axes'.",
    )
    parser.add_argument("schedule", nargs="?", metavar="FILE.goal|TRACE",
                        help="GOAL schedule to simulate, or a traced run (as contend goal convert takes: converted, "
                        "and extrapolated to each count of a ranks axis)")
    add_collective_options(parser, required=False)
    parser.add_argument("--machine", metavar="NAME|FILE.toml",
                        help="machine preset or file (default loggopsim-default); the machine axis replaces it")
    parser.add_argument("--vary", metavar="AXIS=VALUES", action="append", default=[],
                        help="an axis and its comma-separated values; repeat for more axes")
    parser.add_argument("--workers", metavar="N", help="local processes (default 2)")
    parser.add_argument("--critical-path", action="store_true",
                        help="split each run's makespan along its critical path (computation, overhead, wire, "
                        "late partner, contention, noise): a 'most of it' column, the split in the JSON and "
                        "report; slower on large runs")
    parser.add_argument("-o", "--output", metavar="DIR", default="whatif-output", help="output directory")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys
    from contend.atomic import scratch_directory

    from rich.console import Console

    from contend.analysis.whatif import convert_trace, parse_axes, whatif
    from contend.atomic import atomic_directory, check_directory
    from contend.machine.file import machine_of
    from contend.parallel import is_root
    from contend.machine.quantities import parse_count
    from contend.report.progress import simulation_progress
    from contend.report.whatif import whatif_table, write_report

    workload = _workload(args)
    machine = machine_of(args.machine)
    axes = parse_axes(args.vary, workload, machine)
    workers = parse_count(args.workers, "--workers", minimum=1, maximum=256) if args.workers else None
    root = is_root()
    check_directory(args.output, "-o")  # on every rank: one refusing alone would leave the others waiting
    with scratch_directory("contend-whatif-") as converted:
        if workload.trace is not None:  # each rank of an MPI fan-out converts its own copy
            workload = convert_trace(workload, axes, converted, machine.mpi)
        with simulation_progress("what if", unit="runs") as bar:
            result = whatif(workload, machine, axes, workers=workers, progress=bar if root else None,
                            critical_path=args.critical_path)
    if not root:
        return 0
    Console().print(whatif_table(result))
    with atomic_directory(args.output, "-o") as out:  # every file, or none
        written = write_report(result, out)
    Console().print(f"wrote {args.output}/: {', '.join(written)}")
    deadlocked = result.deadlocked()
    if deadlocked:
        first = ", ".join(f"{k}={v}" for k, v in deadlocked[0]["settings"].items()) or "the only run"
        print(f"contend: deadlock: {len(deadlocked)} of {len(result.runs)} run(s) deadlocked (first: {first}; "
              "contend sim names the blocked operations)", file=sys.stderr)
        return EXIT_DEADLOCK
    return 0


def _workload(args: argparse.Namespace):
    """The schedule or the generated collective, checked as contend sim checks them."""
    from contend.analysis.whatif import Workload
    from contend.simulation.simulate import collective_arguments

    if (args.schedule is None) == (args.collective is None):
        raise UserError("whatif: give a GOAL file or --collective NAME --ranks P --bytes S (one of the two)")
    if args.schedule is not None:
        for option in ("ranks", "bytes"):
            if getattr(args, option) is not None:
                raise UserError(f"whatif: --{option} applies to --collective, not to a GOAL file")
        return Workload(trace=args.schedule) if _is_trace(args.schedule) else Workload(schedule=args.schedule)
    name, ranks, size, root, seed = collective_arguments(args.collective, args.ranks, args.bytes, args.root, args.seed)
    return Workload(collective=name, ranks=ranks, bytes=size, root=root, seed=seed)


def _is_trace(path: str) -> bool:
    """A traced run rather than a GOAL file: what contend goal convert reads."""
    from pathlib import Path

    from contend.engine import engine

    return Path(path).is_dir() or path.endswith(".otf2") or (
        Path(path).is_file() and engine().trace_format(path) is not None)
