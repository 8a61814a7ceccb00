"""``contend goal``: write generated collectives as GOAL text, check GOAL files, convert traced runs to GOAL."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

from contend.atomic import atomic_path, check_writable
from contend.commands.options import add_collective_options
from contend.engine import engine, user_errors
from contend.errors import UserError
from contend.machine.mpi_library import collective_entry_ns
from contend.machine.quantities import parse_count
from contend.native.trace.replay import ALGORITHMS, convert_input, trace_format
from contend.report.progress import simulation_progress
from contend.simulation.simulate import MAX_RANKS, collective_arguments

SUMMARY_KEYS = ("num_ranks", "ops", "sends", "recvs", "calcs", "cpus", "nics")


def register(subparsers) -> None:
    parser = subparsers.add_parser("goal", help="write, check and convert GOAL schedules (traced runs to GOAL)",
                                   description="Write generated collectives as GOAL text; check GOAL files; convert "
                                   "traced MPI runs into GOAL.")
    actions = parser.add_subparsers(dest="goal_command", metavar="ACTION")
    actions.required = True

    write = actions.add_parser("write", help="write a generated collective as a GOAL file",
                               description="Write a generated collective as GOAL text (gzip if FILE ends in .gz).")
    add_collective_options(write, required=True)
    write.add_argument("-o", "--output", metavar="FILE.goal", required=True, help="output file (.goal or .goal.gz)")
    write.set_defaults(func=run_write)

    check = actions.add_parser("check", help="parse a GOAL file and print its summary",
                               description="Parse a GOAL file; errors name file:line:column (exit 2).")
    check.add_argument("schedule", metavar="FILE.goal", help="GOAL schedule (.goal or .goal.gz)")
    check.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    check.set_defaults(func=run_check)

    convert = actions.add_parser(
        "convert", help="convert a traced MPI run into a GOAL schedule",
        description="Convert a traced MPI run (a `contend trace` directory, a liballprof trace set: its directory "
                    "or rank-0 file, or an OTF2 anchor file) into GOAL, "
                    "with MPI's dependencies and collectives as point-to-point algorithms (docs/models.md, "
                    "'Replaying traces'). Bad traces: file:line and exit 2.")
    convert.add_argument("input", metavar="INPUT", help="trace: a `contend trace` directory, a directory or the "
                         "rank-0 file of a liballprof trace set, or an OTF2 anchor file (.otf2)")
    convert.add_argument("-o", "--output", metavar="APP.goal", required=True, help="output file (.goal or .goal.gz)")
    convert.add_argument("--cpu-scale", type=float, default=1.0, metavar="X",
                         help="computation times times X (0.5: a CPU twice as fast; default 1)")
    convert.add_argument("--no-p2p", action="store_true", help="leave out point-to-point calls (their time becomes computation)")
    convert.add_argument("--no-collectives", action="store_true", help="leave out collectives (their time becomes computation)")
    convert.add_argument("--no-in-place", action="store_true",
                         help="make every one-sided operation a message, also those MPI does in place (a window MPI "
                              "allocated, origin and target on one host): for ranks of one host standing for nodes")
    convert.add_argument("--nbc-prepost", metavar="TIME", default="0",
                         help="start each blocking collective TIME earlier, overlapping the computation before it (e.g. 10us)")
    convert.add_argument("--window", metavar="FIRST:COUNT",
                         help="only the calls from each rank's FIRST-th collective on, for COUNT collectives (0-based)")
    convert.add_argument("--copy-time", metavar="PER_BYTE", default="0",
                         help="emulated copy time of received messages: a calc per byte after each receive (e.g. 0.1ns)")
    convert.add_argument("--collective-entry", metavar="TIME", default="0",
                         help="CPU time of entering a collective beyond its messages: a calc before each collective "
                              "call of every rank (e.g. 190ns; a machine's [mpi] collective_entry, which contend "
                              "predict uses)")
    convert.add_argument("--ranks", metavar="N",
                         help="extrapolate to N ranks: N/P copies of the P traced ranks, talking to each other only in "
                              "collectives on the world (weak scaling; docs/models.md, 'Extrapolating a trace')")
    convert.add_argument("--algorithms", choices=ALGORITHMS, default="mpich",
                         help="collective algorithm defaults: MPICH's selection by size (default), MPICH's on "
                              "shared memory (mpich-shm: every rank on one node) or Schedgen's")
    convert.add_argument("--algorithm", action="append", default=[], metavar="COLL=PATTERN",
                         help="fix one collective's algorithm, e.g. allreduce=allreduce-ring (repeatable)")
    convert.set_defaults(func=run_convert)


def run_write(args: argparse.Namespace) -> int:
    target = check_writable(args.output, "-o")
    name, ranks, size, root, seed = collective_arguments(args.collective, args.ranks, args.bytes, args.root, args.seed)
    with atomic_path(target) as temporary, user_errors(f"collective {name}"):
        engine().write_goal(name, ranks, size, str(temporary), root=root, seed=seed)
    print(f"wrote {target}: {name}, {ranks:,} ranks, {size:,} bytes ({target.stat().st_size:,} bytes on disk)")
    return 0


def run_check(args: argparse.Namespace) -> int:
    with user_errors(args.schedule):
        summary = engine().goal_summary(args.schedule)
    summary = {key: summary[key] for key in SUMMARY_KEYS if key in summary} | {
        key: value for key, value in summary.items() if key not in SUMMARY_KEYS
    }
    if args.json:
        sys.stdout.write(json.dumps({"schedule": args.schedule, **summary}) + "\n")
    else:
        from rich.console import Console

        from contend.report.tables import rows_table

        Console().print(rows_table(f"{args.schedule}: OK", ["", "count"], list(summary.items())))
    return 0


def _window(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    first, sep, count = text.partition(":")
    if not sep or not first.isdigit() or not count.isdigit() or int(count) == 0:
        raise UserError(f"--window: expected FIRST:COUNT (two whole numbers, COUNT > 0), not {text!r}")
    return int(first), int(count)


def run_convert(args: argparse.Namespace) -> int:
    if not (math.isfinite(args.cpu_scale) and args.cpu_scale >= 0):
        raise UserError(f"--cpu-scale: must be a finite number >= 0, not {args.cpu_scale}")
    window = _window(args.window)
    ranks = None if args.ranks is None else parse_count(args.ranks, "--ranks", minimum=1, maximum=MAX_RANKS)
    with user_errors("--nbc-prepost"):
        prepost_ns = engine().parse_time(args.nbc_prepost) // 1000
    with user_errors("--copy-time"):
        copy_ns = engine().parse_per_byte(args.copy_time) / 1000
    entry_ns = collective_entry_ns(args.collective_entry, "--collective-entry")
    kind = trace_format(args.input)  # a missing or unreadable input before the output's checks
    target = check_writable(args.output, "-o")
    start = time.perf_counter()
    with simulation_progress("converting", unit="ranks") as progress, atomic_path(target) as temporary, \
            user_errors():
        summary, read_warnings = convert_input(
            args.input, str(temporary), progress=lambda rank, total, records: progress(rank, total), kind=kind,
            cpu_scale=args.cpu_scale, p2p=not args.no_p2p, collectives=not args.no_collectives,
            nbc_prepost=prepost_ns, window=window, copy_per_byte=copy_ns, collective_entry=entry_ns, preset=args.algorithms,
            algorithms=args.algorithm, ranks=ranks, in_place=not args.no_in_place)
    elapsed = max(time.perf_counter() - start, 1e-9)
    for warning in read_warnings + summary["warnings"]:
        print(f"contend: warning: {warning}", file=sys.stderr)
    in_place = (f"; {summary['in_place']:,} one-sided operations done in place (windows MPI allocated, target on "
                "the same host): their calls' time is work" if summary.get("in_place") else "")
    print(f"wrote {target}: {summary['ranks']:,} ranks, {summary['records']:,} records read, "
          f"{summary['ops']:,} ops written ({summary['records'] / elapsed:,.0f} records/s){in_place}")
    return 0
