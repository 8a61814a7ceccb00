"""``contend predict``: run an MPI program, trace it, replay its schedule on a machine model and put the
predicted time between MPI_Init and MPI_Finalize beside the measured one.

    contend predict --machine M [--runs N] [--json FILE] -- mpiexec -n 4 ./prog
    contend predict --machine M --throttle SPEC --ranks-per-node K -- mpiexec -n 4 ./prog
    contend predict --machine M --trace DIR       (a `contend trace` directory: its own time)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from contend.commands.options import add_fabric_prefix, launch_words, run_timeout
from contend.errors import UserError
from contend.machine.quantities import parse_count
from contend.native.trace.replay import ALGORITHMS, AUTO_ALGORITHMS

if TYPE_CHECKING:
    from contend.noise.settings import NoiseSettings


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "predict", help="predict a real MPI run's time from its trace and compare with the measured time",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run COMMAND --runs times untraced and --runs times under the tracer (alternating), convert "
        "each trace to a schedule (contend goal convert), simulate it on --machine, and report predicted "
        "against measured time between MPI_Init and MPI_Finalize: median and range of each, the tracer's "
        "cost, the error (docs/measure.md, \"Prediction against reality\").\n\n"
        "  contend predict --machine this-host.toml -- mpiexec -n 4 ./prog\n"
        "  contend predict --machine this-host.toml --throttle token:2 --ranks-per-node 2 -- mpiexec -n 4 ./prog\n"
        "  contend predict --machine this-host.toml --trace DIR\n\nExit code 2 for bad input.")
    parser.add_argument("--machine", metavar="NAME|FILE.toml", help="machine model (e.g. from contend bench fit)")
    parser.add_argument("--trace", metavar="DIR", help="predict this trace directory against its own time; no runs")
    parser.add_argument("--html", metavar="DIR", help="also write DIR/index.html: predicted against measured time "
                        "run by run, and where the predicted time goes")
    parser.add_argument("--noise", metavar="SPEC",
                        help="also predict with this noise (contend sim --noise), e.g. trace:host.noise from "
                             "contend noise measure --mpi -n N --per-core")
    parser.add_argument("--throttle", metavar="SPEC",
                        help="run the untraced runs under libcontend-throttle.so with this policy and simulate it "
                             "(contend sim --throttle: token:TOKENS[:SIZE_PER_TOKEN], rate:GAP, "
                             "proxy:SERVERS[:TOKENS], adaptive[:TOKENS]); needs --ranks-per-node, but on the fabric, "
                             "whose nodes share the pools")
    parser.add_argument("--ranks-per-node", metavar="K",
                        help="with --throttle: ranks that share a node (its token pool), for the runs and the model")
    parser.add_argument("--fabric", action="store_true",
                        help="run `mpiexec -n N PROG` on the emulated fabric that is up (rank r on node r // ppn)")
    add_fabric_prefix(parser)
    parser.add_argument("--placement", metavar="FILE",
                        help="with --fabric: the node of each rank (contend map's placement.toml, or node numbers in "
                             "rank order); the runs use it and so does the prediction (--machine needs a [topology])")
    parser.add_argument("--fifo", action="store_true",
                        help="run every rank with real-time priority (chrt -f 1, root) so other jobs cannot preempt "
                             "it; at most one rank per core")
    parser.add_argument("--algorithms", choices=(AUTO_ALGORITHMS, *ALGORITHMS), default=AUTO_ALGORITHMS,
                        help="collective algorithms of the schedules (contend goal convert --algorithms; default "
                             "auto: mpich-shm when every traced rank ran on one host, else mpich)")
    parser.add_argument("--runs", default="5", metavar="N", help="untraced and traced runs each (default 5)")
    parser.add_argument("--records", default=None, metavar="N",
                        help="records the tracer keeps per rank (default 2^20; a run that drops any is refused)")
    parser.add_argument("--keep", metavar="DIR",
                        help="keep the traced runs' rank files (DIR/traces/run-K) and the last schedule in DIR")
    parser.add_argument("--timeout", default="600", metavar="S", help="end each run after S seconds (default 600)")
    parser.add_argument("--json", metavar="FILE", help="also write the result as JSON (- for standard output)")
    parser.add_argument("--no-host-check", action="store_true",
                        help="skip the host check: the 1-byte round trip the machine file was fitted with, "
                             "measured again before and after the runs (a warning when it moved more than 10%%)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the MPI launch command")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from contend.analysis import predict
    from contend.atomic import check_writable

    command = launch_words(args.command)
    if args.machine is None:
        raise UserError("predict: --machine is required (e.g. a file written by contend bench fit)")
    if bool(command) == bool(args.trace):
        raise UserError("predict: give either a launch command after -- or --trace DIR, not both or neither")
    runs = parse_count(args.runs, "--runs", minimum=1, maximum=1000)
    if (args.fifo or args.fabric) and not command:
        raise UserError("predict: --fifo and --fabric apply to runs, not to --trace")
    if args.placement and not args.fabric:
        raise UserError("predict: --placement places the ranks on the emulated fabric: give --fabric too")
    records = parse_count(args.records, "--records", minimum=1, maximum=2**32) if args.records else \
        predict.DEFAULT_RECORDS
    timeout = run_timeout(args.timeout)
    noise = _check_machine(args.machine, args.noise)
    probe = None if args.no_host_check or not command else _probe(args.machine)
    throttle = _throttle(args, command)
    if args.json and args.json != "-":
        check_writable(args.json, "--json")
    if args.html:
        from contend.atomic import check_directory

        check_directory(args.html, "--html")
    keep = None
    if args.keep:
        from contend.atomic import output_directory

        keep = output_directory(args.keep, "--keep")
    machine = args.machine
    try:
        scratch_directory = tempfile.TemporaryDirectory(prefix="contend-predict-")
    except OSError:  # tempfile found no directory it can write a file in
        raise UserError("predict: no writable temporary directory (TMPDIR, /tmp) to work in") from None
    with scratch_directory as scratch, _status() as progress:
        work = keep if keep is not None else Path(scratch)
        built = None  # the emulated fabric the runs go to, if any
        if args.fabric:
            from contend.native import fabric

            built = fabric.require(args.fabric_prefix, "predict: --fabric")
            command, node_of_rank = predict.fabric_command(command, built, Path(scratch), args.placement)
            if args.placement or throttle is not None:  # a policy's nodes are the fabric's, in the model too
                from contend.machine.file import load_machine, loggops_params
                from contend.simulation.layout import NetworkLayout

                machine = load_machine(args.machine).placed(node_of_rank)
                NetworkLayout.of(loggops_params(machine), len(node_of_rank))  # the engine checks it before any run
        if args.fifo:
            command = predict.fifo_command(command)
        check = None
        if probe is not None:
            from contend.analysis.host_check import HostCheck, measure as measure_probe

            progress("measuring the host's round trip (host check)")
            check = HostCheck(probe, measure_probe(probe, built, timeout))
        if args.trace:
            measured = predict.predict_trace(Path(args.trace), args.machine, work, noise, args.algorithms)
        else:
            measured = predict.predict_command(command, machine, runs, work, records=records, noise=noise,
                                               timeout_s=timeout, progress=progress, throttle=throttle,
                                               algorithms=args.algorithms)
        if check is not None:
            progress("measuring the host's round trip again (host check)")
            check.after_ns = measure_probe(probe, built, timeout)
    warnings = list(measured.warnings)
    moved = None if check is None else check.warning(args.machine)
    if moved:
        warnings.append(moved)
    if throttle is not None and throttle.ranks_per_node is not None and measured.ranks <= throttle.ranks_per_node:
        # the library and the model alike
        warnings.append(f"predict: --ranks-per-node {throttle.ranks_per_node} puts all {measured.ranks} ranks on one "
                        "node: the policy throttles nothing (messages within a node are left alone)")
    cores = len(os.sched_getaffinity(0))
    if command and measured.ranks > cores and not _shares_cores(machine):
        warnings.append(f"predict: {measured.ranks} ranks ran on this host's {cores} cores, and the machine has no "
                        "[cores]: the model gives every rank a core of its own (contend bench fit writes [cores])")
    for warning in warnings:
        print(f"contend: warning: {warning}", file=sys.stderr)
    summary = {"command": command or None, "trace": args.trace, "machine": args.machine,
               "throttle": None if throttle is None else {**throttle.policy, "ranks_per_node": throttle.ranks_per_node},
               **measured.summary(), "host_check": None if check is None else check.summary()}
    if args.json:
        text = json.dumps(summary, indent=2)
        if args.json == "-":
            print(text)
        else:
            from contend.atomic import atomic_path

            with atomic_path(args.json) as path:
                path.write_text(text + "\n")
    if args.html:
        from contend.report.predict import write_report

        write_report(" ".join(command) if command else args.trace, summary, args.html)
    if args.json != "-":
        from rich.console import Console

        console = Console()
        console.print(table([(" ".join(command) if command else args.trace, summary)]))
        if check is not None:
            console.print(check.describe(args.machine))
        if measured.critical_path is not None:
            console.print(measured.critical_path.table(
                "where the predicted time goes (critical path of the last traced run's schedule)"))
    return 0


@contextlib.contextmanager
def _status():
    """A status line on stderr while the runs go, only on a terminal (elsewhere stderr keeps only errors)."""
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_interactive:
        yield lambda text: None
        return
    with console.status("predict") as status:
        yield lambda text: status.update(f"predict: {text}")


def _shares_cores(machine) -> bool:
    """Whether the machine's ranks take turns on shared cores (its [cores])."""
    from contend.machine.file import machine_of

    return bool((machine_of(machine).node or {}).get("cores"))


def _check_machine(machine: str, noise: str | None) -> NoiseSettings | bool | None:
    """A bad machine or noise fails before any run, not after. Returns the noise parsed once, as
    ``simulate`` takes it for every run: settings, False for ``none``, None when not given."""
    from contend.machine.file import loggops_params

    loggops_params(machine)
    if noise is None:
        return None
    from contend.noise.settings import resolve

    return resolve(noise, None) or False


def _probe(machine: str):
    """The host check's probe of the machine file's records (None when it has none), or a UserError naming
    the file, before any run."""
    from contend.analysis.host_check import probe_of
    from contend.machine.file import machine_of

    return probe_of(machine_of(machine))


def _throttle(args: argparse.Namespace, command: list[str]):
    """The policy of --throttle and --ranks-per-node, checked before any run (None without them)."""
    if args.throttle is None:
        if args.ranks_per_node is not None:
            raise UserError("predict: --ranks-per-node says which ranks share a token pool: give --throttle too")
        return None
    if not command:
        raise UserError("predict: --throttle applies to runs, not to --trace")
    if args.fabric and args.ranks_per_node is not None:
        raise UserError("predict: on the emulated fabric its nodes share the pools (the library tells them by host "
                        "name, the model by the placement): leave out --ranks-per-node")
    if not args.fabric and args.ranks_per_node is None:
        raise UserError("predict: --throttle needs --ranks-per-node (the ranks that share a node's pool)")
    from contend.analysis.predict import Throttle
    from contend.machine.admission import parse_spec

    policy = parse_spec(args.throttle)
    if policy is None:
        raise UserError("predict: --throttle none: give a policy, or leave --throttle out")
    per_node = None if args.fabric else parse_count(args.ranks_per_node, "--ranks-per-node", minimum=1,
                                                    maximum=2**31 - 1)
    throttle = Throttle(policy, per_node)
    throttle.check(f"predict: --throttle {args.throttle}" +
                   ("" if per_node is None else f" --ranks-per-node {args.ranks_per_node}"))
    return throttle


def _ms(value) -> str:
    return "-" if value is None else f"{value / 1e6:.3f}"


def _range(spread: dict) -> str:
    if spread["median_ns"] is None:
        return "-"
    if spread["runs"] == 1:
        return _ms(spread["median_ns"])
    return f"{_ms(spread['median_ns'])} [{_ms(spread['min_ns'])}..{_ms(spread['max_ns'])}]"


def _pct(value) -> str:
    return "-" if value is None else f"{value:+.1f}"


def table(rows, title: str = "predicted vs measured time between MPI_Init and MPI_Finalize (ms)"):
    """One row per (label, summary): medians [min..max] of the runs and the errors in %; the predictions
    with noise when there are any."""
    from contend.report.terminal import Table

    noisy = any(s["noisy"]["runs"] for _, s in rows)
    throttled = any(s.get("throttle") for _, s in rows)
    cost = not all(s.get("throttle") for _, s in rows)  # throttled against unthrottled: not the tracer's cost
    out = Table(title=title)
    columns = [("program", "left"), ("ranks", "right"), ("throttled" if throttled else "untraced", "right"), ("traced", "right"),
               *[("tracer %", "right")] * cost, ("predicted", "right"), ("error %", "right"), ("vs traced %", "right")]
    if noisy:
        columns += [("with noise", "right"), ("error %", "right")]
    for name, justify in columns:
        out.add_column(name, justify=justify)
    for label, s in rows:
        cells = [label, str(s["ranks"]), _range(s["untraced"]), _range(s["traced"]),
                 *[_pct(s["tracing_overhead_pct"])] * cost, _range(s["predicted"]), _pct(s["error_pct"]),
                 _pct(s["error_vs_traced_pct"])]
        if noisy:
            cells += [_range(s["noisy"]), _pct(s["error_noisy_pct"])]
        out.add_row(*cells)
    out.caption = ("error: predicted median against the untraced median; vs traced: each traced run's "
                   "prediction against that run's own time (median)" +
                   ("; throttled: the untraced runs under libcontend-throttle.so, predicted with the same "
                    "policy; the traced runs and their predictions (vs traced) are unthrottled" if throttled else "") +
                   ("; with noise: simulated with --noise" if noisy else ""))
    return out
