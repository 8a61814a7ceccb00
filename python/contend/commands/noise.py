"""``contend noise``: measure this machine's OS noise with the selfish-detour loop and keep it as a noise
trace the engine replays (``measure``); inspect a trace (``show``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from contend.atomic import beside, check_writable
from contend.errors import UserError
from contend.machine.quantities import bounded_number, parse_count

# pandas, matplotlib and rich load inside the actions, as in the other commands.


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "noise", help="measure OS noise (selfish detour) into a noise trace; show a trace",
        description="Measure the OS noise of this machine and save it as a trace that `contend sim --noise "
                    "trace:FILE` replays (docs/measure.md, docs/models.md \"Noise\").")
    actions = parser.add_subparsers(dest="noise_command", metavar="ACTION")
    actions.required = True

    measure = actions.add_parser(
        "measure", help="run the selfish-detour loop and save a noise trace",
        description="Spin reading the clock for T seconds; every iteration longer than the threshold (default 10x "
                    "the clock's resolution) is a detour. Reports the resolution, detours, overhead, the largest "
                    "detours and their distribution; writes the trace, a histogram and CDF plot, and with --json a "
                    "summary for machines.")
    measure.add_argument("--seconds", metavar="T", default="5", help="length of the loop (default 5)")
    measure.add_argument("--threshold", metavar="NS", help="detour threshold in ns (default 10x the resolution)")
    measure.add_argument("--per-core", action="store_true",
                         help="one loop per core, each pinned to its core (sched_setaffinity)")
    measure.add_argument("--mpi", action="store_true", help="an MPI job of -n ranks (one trace per rank)")
    measure.add_argument("-n", metavar="N", help="ranks with --mpi (default: the cores this process may use)")
    measure.add_argument("-o", "--output", metavar="FILE.noise", default="this-host.noise",
                         help="noise trace to write (default this-host.noise)")
    measure.add_argument("--plot", metavar="FILE.png", help="plot (default: the trace's name with .png)")
    measure.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    measure.add_argument("--timeout", metavar="S", help="stop the run after S seconds (default 3T + 120)")
    measure.set_defaults(func=run_measure)

    show = actions.add_parser("show", help="summarise a noise trace (checks it like the engine does)")
    show.add_argument("trace", metavar="FILE.noise")
    show.add_argument("--plot", metavar="FILE.png", help="also draw its histogram, CDF and timeline")
    show.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    show.set_defaults(func=run_show)



def _ranks(args: argparse.Namespace) -> int:
    from contend.noise.measure import usable_cores

    if args.n is not None and not args.mpi:
        raise UserError("-n: the number of ranks applies with --mpi")
    if args.mpi:
        return parse_count(args.n, "-n", minimum=1, maximum=4096) if args.n is not None else usable_cores()
    return usable_cores() if args.per_core else 1


def run_measure(args: argparse.Namespace) -> int:
    from rich.console import Console

    from contend.noise.measure import measure, save_trace, summary
    from contend.noise.trace import read_trace
    from contend.report.noise import noise_figure

    seconds = bounded_number(args.seconds, "--seconds", 0.01, 3600)
    threshold = bounded_number(args.threshold, "--threshold", 1, 1e9) if args.threshold is not None else None
    timeout = bounded_number(args.timeout, "--timeout", 1, 86400) if args.timeout is not None else None
    trace_path = check_writable(args.output, "-o")
    plot_path = beside(trace_path, trace_path.stem + ".png")
    if plot_path is None:  # a device
        raise UserError(f"-o: {trace_path} is not a regular file; the trace is read back to replay it")
    plot_path = check_writable(args.plot or plot_path, "--plot")
    ranks = _ranks(args)
    console = Console(stderr=args.json)
    with console.status(f"selfish detour: {ranks} rank(s){' pinned' if args.per_core else ''} for {seconds:g} s"):
        m = measure(seconds, ranks, pin=args.per_core, threshold_ns=threshold, timeout_s=timeout)
    kept = save_trace(m, trace_path)
    trace = read_trace(trace_path)  # the engine's reader: the file is replayable as written
    result = summary(m, str(trace_path))
    result["replay"] = _replay(trace_path, trace)
    noise_figure(plot_path, m.detours, f"selfish detour on {result['host']}: {ranks} rank(s), {seconds:g} s, "
                                       f"overhead {result['overhead_pct']:.2f}%")
    result["plot"] = str(plot_path)
    if args.json:
        sys.stdout.write(json.dumps(result, default=float) + "\n")
        return 0
    _print_measurement(console, result)
    console.print(f"trace: {trace_path} ({kept:,} detours over {trace.duration_ns / 1e9:.3f} s, {trace.ranks} rank(s); "
                  f"replay with contend sim --noise trace:{trace_path})  plot: {plot_path}")
    return 0


def _replay(path: Path, trace) -> list[dict]:
    """Per rank: what one second of CPU work becomes when the engine replays the trace from its start."""
    from contend.engine import engine, user_errors

    work = 10**12  # 1 s in ps
    params = {"noise": {"kind": "trace", "files": [str(path)], "phase": 0, "seed": 0, "per_byte": False}}
    rows = []
    with user_errors(str(path)):
        for rank in range(trace.ranks):
            end = engine().noise_stretch(params, rank, 0, work)
            rows.append({"rank": rank, "work_s": 1.0, "elapsed_s": end / 1e12, "slowdown_pct": 100 * (end - work) / work})
    return rows


def _print_measurement(console, result: dict) -> None:
    from contend.report.tables import rows_table

    console.print(f"host {result['host']}, load {result['loadavg_1min']}, clock resolution {result['resolution_ns']:.0f} ns, "
                  f"threshold {result['threshold_ns']:.0f} ns: {result['detours']:,} detours, "
                  f"noise overhead {result['overhead_pct']:.2f}%")
    replay = {r["rank"]: r for r in result["replay"]}
    console.print(rows_table("per rank", ["rank", "cpu", "resolution ns", "detours", "per s", "overhead %",
                                          "replayed: 1 s of work takes (s)"],
                             [[r["rank"], r["cpu"], round(r["resolution_ns"]), r["detours"], round(r["rate_per_s"]),
                               round(r["overhead_pct"], 3), round(replay[r["rank"]]["elapsed_s"], 5)]
                              for r in result["per_rank"]]))
    _print_distribution(console, result["distribution"])
    console.print(rows_table("largest detours", ["rank", "at s", "length us"],
                             [[int(d["rank"]), round(d["start_ns"] / 1e9, 4), round(d["length_ns"] / 1e3, 1)]
                              for d in result["largest"]]))


def _print_distribution(console, rows: list[dict]) -> None:
    from contend.report.tables import rows_table

    def span(row: dict) -> str:  # units joined to their number, so a narrow table never parts them
        def unit(ns: float) -> str:
            return f"{ns / 1e6:g}ms" if ns >= 1e6 else f"{ns / 1e3:g}us"
        if row["from_ns"] == 0:
            return f"< {unit(row['to_ns'])}"
        return f">= {unit(row['from_ns'])}" if row["to_ns"] == float("inf") else f"{unit(row['from_ns'])} - {unit(row['to_ns'])}"

    console.print(rows_table("detour lengths", ["length", "detours", "share of detours %", "overhead %"],
                             [[span(r), r["count"], round(100 * r["share"], 2), round(r["overhead_pct"], 4)] for r in rows]))


def run_show(args: argparse.Namespace) -> int:
    import numpy as np
    from rich.console import Console

    from contend.noise.measure import distribution
    from contend.noise.trace import read_trace
    from contend.report.noise import noise_figure

    plot_path = check_writable(args.plot, "--plot") if args.plot else None
    trace = read_trace(args.trace)
    lengths = trace.detours["length_ns"].to_numpy()
    overhead = trace.overhead()
    per_rank = [{"rank": r, "detours": int((trace.detours["rank"] == r).sum()), "overhead_pct": 100 * float(overhead[r])}
                for r in range(trace.ranks)]
    result = {
        "trace": trace.path, "duration_ns": trace.duration_ns, "resolution_ns": trace.resolution_ns,
        "threshold_ns": trace.threshold_ns, "ranks": trace.ranks, "detours": int(lengths.size),
        "overhead_pct": 100 * float(overhead.mean()),
        "detour_ns": {key: float(fn(lengths)) if lengths.size else None
                      for key, fn in (("p50", np.median), ("max", np.max), ("mean", np.mean))},
        "per_rank": per_rank,
        "distribution": distribution(trace.detours, trace.duration_ns * trace.ranks),
    }
    if plot_path is not None:
        noise_figure(plot_path, trace.detours, f"{Path(trace.path).name}: {trace.ranks} rank(s), "
                                               f"{trace.duration_ns / 1e9:.3f} s")
    if args.json:
        sys.stdout.write(json.dumps(result) + "\n")
        return 0
    from contend.report.tables import rows_table

    console = Console()
    console.print(f"{trace.path}: {trace.ranks} rank(s), {trace.duration_ns / 1e9:.6g} s, {lengths.size:,} detours, "
                  f"overhead {result['overhead_pct']:.3f}%"
                  + (f", resolution {trace.resolution_ns:g} ns" if trace.resolution_ns is not None else ""))
    console.print(rows_table("per rank", ["rank", "detours", "overhead %"],
                             [[r["rank"], r["detours"], round(r["overhead_pct"], 4)] for r in per_rank]))
    _print_distribution(console, result["distribution"])
    return 0
