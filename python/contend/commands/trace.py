"""``contend trace``: run an MPI program under libcontend-trace.so and turn its per-rank files into trace
records (``DIR/records.parquet``, ``DIR/regions.parquet``) for ``contend diagnose``; or import an OTF2
trace into the same records.

    contend trace -o DIR [options] -- mpiexec -n 4 ./prog
    contend trace convert DIR            (again, from the rank files already in DIR)
    contend trace import TRACE.otf2 -o records.parquet
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from contend.commands.options import launch_words, run_timeout
from contend.errors import UserError
from contend.machine.quantities import parse_count

ACTIONS = ("convert", "import")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "trace", help="trace an MPI run (or import OTF2) into records for contend diagnose",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run COMMAND with libcontend-trace.so preloaded (every rank records its MPI calls: "
        "two-sided, one-sided and collectives, with call sites), then write DIR/records.parquet and "
        "DIR/regions.parquet, symbolized and on one clock (docs/formats.md, \"Trace files\").\n\n"
        "  contend trace -o DIR [options] -- mpiexec -n 4 ./prog\n"
        "  contend trace convert DIR\n"
        "  contend trace import TRACE.otf2 -o records.parquet\n\nExit code 2 for bad input or a bad trace.")
    parser.add_argument("-o", "--output", metavar="DIR|FILE",
                        help="trace directory (run), or the records file (import)")
    parser.add_argument("--records", default="262144", metavar="N",
                        help="records kept per rank (96 bytes each; at most 2^32 and what the machine's memory "
                             "holds); beyond that they are counted as dropped")
    parser.add_argument("--depth", default="1", metavar="D",
                        help="return addresses per call, 1..6 (the call site and D-1 callers; more costs "
                             "an unwind per call)")
    parser.add_argument("--clock", choices=("tsc", "monotonic"), default="tsc",
                        help="timestamps from the time-stamp counter (x86-64; converted to ns after the run) or "
                             "clock_gettime(CLOCK_MONOTONIC)")
    parser.add_argument("--machine", metavar="NAME|FILE.toml",
                        help="store this machine's LogGOPS parameters in the records, so contend diagnose "
                             "needs no --machine")
    parser.add_argument("--timeout", default="3600", metavar="S",
                        help="end the traced run after S seconds (default 3600, at most a week)")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- the MPI launch command; or `convert DIR`, or `import TRACE.otf2`")
    parser.set_defaults(func=run)


def _machine_params(machine: str | None):
    if machine is None:
        return None
    from contend.machine.file import loggops_params
    from contend.simulation.result import parameters_ns

    return parameters_ns(loggops_params(machine))


def run(args: argparse.Namespace) -> int:
    command = launch_words(args.command)
    if not command:
        raise UserError("trace: give the command to trace after --, e.g. contend trace -o DIR -- mpiexec -n 4 "
                        "./prog; or `contend trace convert DIR`, `contend trace import TRACE.otf2 -o FILE`")
    if command[0] == "import" and args.command[0] != "--":
        return _import(command[1:], args)
    if command[0] == "convert" and args.command[0] != "--":
        if len(command) != 2:
            raise UserError("trace convert: give one trace directory")
        return _convert(Path(command[1]), _machine_params(args.machine))
    if args.output is None:
        raise UserError("trace: -o DIR is required (where the rank files and records go)")
    args.records = parse_count(args.records, "--records", minimum=1, maximum=_max_records())
    args.depth = parse_count(args.depth, "--depth", minimum=1, maximum=6)
    args.timeout = run_timeout(args.timeout)
    params = _machine_params(args.machine)  # a bad machine fails before the run, not after
    from contend.native.trace.launch import prepare_directory, run_traced

    made = [p for p in (Path(args.output).absolute(), *Path(args.output).absolute().parents) if not os.path.lexists(p)]
    directory = prepare_directory(Path(args.output))
    try:
        run_traced(command, directory, records=args.records, depth=args.depth, clock=args.clock,
                   timeout_s=args.timeout)
        return _convert(directory, params)
    except BaseException:
        # directories this run made and nothing wrote into go again (deepest first); rank files stay for
        # `contend trace convert`
        for path in made:
            if path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        raise


def _max_records() -> int:
    """Records per rank the tracer takes (CONTEND_TRACE_RECORDS, native/trace/init.c: at most 2^32) and one
    rank's buffer of them fits this machine's memory."""
    from contend.native.trace.files import RECORD

    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return min(2**32, memory // RECORD.itemsize)


def _convert(directory: Path, params) -> int:
    from rich.console import Console

    from contend.atomic import check_writable
    from contend.native.trace.convert import convert, write

    if directory.is_dir():  # a place the records cannot be written fails before the rank files are read
        for name in ("records.parquet", "regions.parquet"):
            check_writable(directory / name, "trace convert")
    console = Console(stderr=False)
    with console.status(f"reading and symbolizing {directory}"):
        converted = convert(directory)
    records, regions = write(converted, directory, params)
    for warning in converted.warnings:
        print(f"contend: warning: {warning}", file=sys.stderr)
    console.print(_summary(converted, records, regions))
    return 0


def _summary(converted, records: Path, regions: Path):
    from contend.report.terminal import Table

    table = Table(title=f"trace: {converted.ranks} ranks -> {records}")
    table.add_column("kind")
    table.add_column("calls", justify="right")
    counts = converted.counts
    skip = {"records", "dropped", "untracked", "messages"}
    for kind, n in sorted(((k, v) for k, v in counts.items() if k not in skip), key=lambda kv: -kv[1]):
        table.add_row(kind, str(n))
    table.add_row("[bold]messages paired[/bold]", str(counts.get("messages", 0)))
    table.add_row("dropped (buffer full)", str(counts.get("dropped", 0)))
    worst = max((c["error_ns"] for c in converted.clock), default=0.0)
    table.caption = f"clock error at most {worst / 1000:.1f} us; regions: {regions}"
    return table


def _import(rest: list[str], args: argparse.Namespace) -> int:
    from contend.native.trace.otf2_import import import_otf2, write_records

    # options may follow the trace's name: contend trace import T.otf2 -o out.parquet
    files, output, machine = [], args.output, args.machine
    words = iter(rest)
    for word in words:
        if word in ("-o", "--output", "--machine"):
            value = next(words, None)
            if value is None:
                raise UserError(f"trace import: {word} needs a value")
            if word == "--machine":
                machine = value
            else:
                output = value
        else:
            files.append(word)
    if len(files) != 1:
        raise UserError("trace import: give one OTF2 trace (its .otf2 anchor file)")
    if output is None:
        raise UserError("trace import: -o FILE.parquet is required")
    from contend.atomic import check_writable

    check_writable(output, "-o")
    params = _machine_params(machine)
    imported = import_otf2(files[0])
    write_records(imported, output, params)
    for warning in imported.warnings:
        print(f"contend: warning: {warning}", file=sys.stderr)
    print(f"imported {len(imported.records)} operations of {imported.ranks} ranks from {files[0]} into {output}")
    return 0
