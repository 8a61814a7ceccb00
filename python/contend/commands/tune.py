"""``contend tune``: sweep a machine's NIC (simulated on its machine file), derive the congestion
thresholds and token count (contend.analysis.tune), and write them as a machine file with a
``[throttle]`` table and as a configuration file of the native throttle library."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from contend.atomic import atomic_directory, atomic_path, check_directory
from contend.errors import UserError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "tune", help="derive congestion thresholds and token counts from NIC sweeps",
        description="Run Luo et al. 2012's NIC sweeps (active cores x size, outstanding messages per core) on a machine "
        "file's engine model, derive CCT, NRCT, CRCT and a token count (docs/models.md, 'NIC congestion and "
        "admission control'), and write DIR/machine.toml (the machine with a [throttle] table), DIR/throttle.conf "
        "(for libcontend-throttle.so), DIR/sweep.csv and DIR/tune.json. Under mpiexec the sweep points are shared "
        "among the ranks; otherwise among local processes.",
    )
    parser.add_argument("--machine", metavar="NAME|FILE.toml", required=True, help="machine preset or file to tune")
    parser.add_argument("--ranks-per-node", metavar="N", help="ranks sharing a NIC (default: the machine's)")
    parser.add_argument("--tolerance", metavar="X", default="0.05",
                        help="a threshold is the largest setting within X of the best throughput (default 0.05)")
    parser.add_argument("--quick", action="store_true", help="one size, fewer points (seconds)")
    parser.add_argument("--workers", metavar="N", help="local processes (default 2)")
    parser.add_argument("--real", metavar="NP",
                        help="measure the sweeps on this host with the native suite (contend native build) on NP "
                        "ranks, the two halves standing for two nodes, instead of simulating them; the machine "
                        "file is then only the base the [throttle] table is added to")
    parser.add_argument("--nimc", action="store_true",
                        help="with --real: also measure MPI_Put traffic into a triad's node at 0.5-8 GB/s and "
                        "unpaced (contend bench nimc's rma source, in bursts), and write memory_throttle = the "
                        "largest rate whose slowdown of the triad stays within --tolerance (NiMC mitigation a)")
    parser.add_argument("-o", "--output", metavar="DIR", default="tune-output", help="output directory")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from contend.report.progress import simulation_progress
    from contend.report.terminal import Table

    from contend.machine.admission import native_config, write_native_config
    from contend.parallel import is_root
    from contend.analysis.tune import FULL, QUICK, real_sweeper, tune
    from contend.machine.file import load_machine
    from contend.machine.quantities import parse_count

    machine = load_machine(args.machine)
    real_ranks = parse_count(args.real, "--real", minimum=2, maximum=64) if args.real is not None else None
    if real_ranks is not None and real_ranks % 2:
        raise UserError(f"--real: the two halves of the ranks stand for two nodes, so NP must be even, got {real_ranks}")
    if args.nimc and real_ranks is None:
        raise UserError("--nimc: the NiMC sweep is measured on this host; give --real NP too")
    if real_ranks is not None and args.ranks_per_node is not None:
        raise UserError("--ranks-per-node: with --real NP the ranks per node are NP / 2; give one of the two")
    if real_ranks is not None:
        rpn = real_ranks // 2
    elif args.ranks_per_node is not None:
        rpn = parse_count(args.ranks_per_node, "--ranks-per-node", minimum=1, maximum=4096)
    elif machine.node is not None and (machine.node.get("nic") or machine.node.get("policy")):
        rpn = machine.node["ranks_per_node"]  # the NIC's; a host's [cores] alone puts every rank on one node
    else:
        raise UserError(f"{machine.path}: the machine says nothing of its nodes; give --ranks-per-node "
                        "(or a [nic] table with ranks_per_node)")
    try:
        tolerance = float(args.tolerance)
    except ValueError:
        tolerance = -1.0
    if not 0 <= tolerance < 1:
        raise UserError(f"--tolerance: expected a number in [0, 1), got {args.tolerance!r}")
    workers = parse_count(args.workers, "--workers", minimum=1, maximum=256) if args.workers else None
    root = is_root()
    check_directory(args.output, "-o")  # on every rank: one refusing alone would leave the others waiting

    with simulation_progress("sweeping", unit="points") as bar:
        advance = bar if root else None  # one bar: rank 0's
        tuned = tune(machine, rpn, QUICK if args.quick else FULL, tolerance, progress=advance, workers=workers,
                     sweeper=real_sweeper(real_ranks, advance) if real_ranks is not None else None)
    if not root:
        return 0
    cap, nimc_table = _memory_throttle(args.quick, tolerance) if args.nimc else (None, None)
    source = f"measured on this host, {real_ranks} ranks" if real_ranks is not None else f"simulated on {machine.name}"
    table = Table(title=f"contend tune ({source}), {rpn} ranks per node, tolerance {tolerance:g}")
    for column in ("size (B)", "CCT (cores)", "NRCT (msgs/node)", "CRCT [cores, msgs/core]"):
        table.add_column(column, justify="right")
    for s in sorted(tuned.cct):
        table.add_row(str(s), str(tuned.cct[s]), str(tuned.nrct[s]), " ".join(f"[{c},{d}]" for c, d in tuned.crct[s]))
    Console().print(table)
    Console().print(f"tokens per node: {tuned.tokens}")
    if args.nimc:
        Console().print("memory_throttle: " + ("none needed (unpaced puts stayed within the tolerance)" if cap == -1
                        else "none: even 0.5 GB/s slowed the triad beyond the tolerance" if cap is None
                        else f"{cap / 1e9:g} GB/s into each node"))
    memory_throttle = int(cap) if cap is not None and cap > 0 else 0

    machine_text = with_throttle(Path(machine.path).read_text(encoding="utf-8"), tuned.throttle_table(), tuned)
    with atomic_directory(args.output, "-o") as out:  # the four files, or none of them
        with atomic_path(out / "machine.toml") as tmp:
            tmp.write_text(machine_text, encoding="utf-8")
        write_native_config(out / "throttle.conf", native_config(
            tuned.tokens, comment=f"written by contend tune from {machine.name} ({rpn} ranks per node)",
            memory_throttle=memory_throttle))
        with atomic_path(out / "sweep.csv") as tmp:
            tuned.table.to_csv(tmp, index=False)
        with atomic_path(out / "tune.json") as tmp:
            nimc = {"nimc": {"memory_throttle_Bps": memory_throttle, "tolerated_Bps": cap,
                             "slowdown": nimc_table.to_dict(orient="records")}} if args.nimc else {}
            tmp.write_text(json.dumps({"machine": machine.name, **tuned.to_dict(), **nimc}, indent=1, default=float),
                           encoding="utf-8")
    Console().print(f"wrote {args.output}/machine.toml, throttle.conf, sweep.csv, tune.json")
    return 0


def _memory_throttle(quick: bool, tolerance: float):
    """The NiMC sweep of --nimc (contend.native.bench.nimc.tune_memory_throttle), with a progress bar."""
    from contend.native.bench import nimc
    from contend.report.progress import simulation_progress

    with simulation_progress("NiMC sweep", unit="runs") as bar:
        return nimc.tune_memory_throttle(2 if quick else 4, tolerance,
                                         progress=lambda done, total, plan: bar(done, total))


_THROTTLE_SECTION = re.compile(r"^\s*\[\[?\s*throttle(\.[A-Za-z_]+)?\s*\]\]?\s*$")
_ANY_SECTION = re.compile(r"^\s*\[")


def with_throttle(text: str, throttle: dict, tuned) -> str:
    """The machine file's text without its ``[throttle]`` tables, with the tuned ones appended."""
    kept, skipping = [], False
    for line in text.splitlines():
        if _ANY_SECTION.match(line):
            skipping = bool(_THROTTLE_SECTION.match(line))
        if not skipping:
            kept.append(line)
    lines = [*kept, "", f"# Written by contend tune (tolerance {tuned.tolerance:g}); docs/models.md.", "[throttle]"]
    for key in ("policy", "tokens", "ranks_per_node"):
        lines.append(f"{key} = {json.dumps(throttle[key])}")
    for cls in throttle["class"]:
        lines += ["", "[[throttle.class]]"]
        lines += [f"{key} = {json.dumps(cls[key])}" for key in ("up_to", "cct", "nrct", "crct") if key in cls]
    return "\n".join(lines) + "\n"
