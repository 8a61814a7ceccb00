"""``contend map``: place a job's ranks on a machine's nodes so that its messages cross fewer links, compare
the placement methods, and write the best placement as the machine file, MPICH, Open MPI and Slurm want it.

    contend map (APP.goal | records.parquet | TRACE_DIR | --collective NAME --ranks P --bytes S)
                --machine M [--method m,m,...|all] -o OUT [--apply] [--hosts FILE] [--json]
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from contend.atomic import scratch_directory
import time
from pathlib import Path

from contend.errors import UserError

# The files of OUT (docs/formats.md, "Mappings").
SUMMARY = "mapping.json"
PLACEMENT = "placement.toml"
MACHINE = "machine.toml"
MACHINEFILE = "machinefile"
RANKFILE = "rankfile"
SLURM_HOSTS = "slurm-hosts"
FROM_FILE = "file"  # the method name of a --placement file in the table and mapping.json


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "map", help="place ranks on nodes to cut hops and link load; write hostfiles and rankfiles",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compute a placement of the job's ranks on the machine's nodes with each method, score each "
        "(hop-bytes, hops per byte, the busiest and the mean link load under the machine's routing, and the "
        "schedule's simulated makespan), and write the best one (lowest hop-bytes, ties by the busiest link; "
        "or the one --method names) to OUT: mapping.json, placement.toml, machine.toml, machinefile (MPICH), "
        "rankfile (Open MPI), slurm-hosts (srun --distribution=arbitrary); docs/formats.md, \"Mappings\".\n\n"
        "  contend map app.goal --machine bgp-torus -o app-map --apply\n"
        "  contend map --collective alltoall-pairwise --ranks 64 --bytes 4KiB --machine xt3-torus -o a2a\n\n"
        "Exit code 2 for bad input.")
    parser.add_argument("input", nargs="?", metavar="APP.goal|records.parquet|TRACE_DIR",
                        help="the job: a GOAL schedule, per-message records, or a trace (directory or OTF2)")
    group = parser.add_argument_group("generated collective")
    group.add_argument("--collective", metavar="NAME", help="pattern to generate instead of an input")
    group.add_argument("--ranks", metavar="P", help="number of ranks")
    group.add_argument("--bytes", metavar="S", help="message size (e.g. 8, 64KiB)")
    group.add_argument("--root", metavar="R", default="0", help="root rank of rooted collectives (default 0)")
    parser.add_argument("--machine", metavar="NAME|FILE.toml", required=True,
                        help="machine with a [topology] table (e.g. bgp-torus, xt3-torus)")
    parser.add_argument("--method", default="all", metavar="m,m,...|all",
                        help="placement methods to compare: block, cyclic, random, sfc, metis, topo, scotch "
                             "(default all; scotch where installed)")
    parser.add_argument("--placement", metavar="FILE",
                        help="also score this placement (one node per rank, as placement.toml or a plain list)")
    parser.add_argument("--seed", default="0", metavar="N",
                        help="seed of the random choices (random placement, refinement, random patterns; default 0)")
    parser.add_argument("--no-simulate", action="store_true", help="skip the simulated makespan of each placement")
    parser.add_argument("-o", "--output", required=True, metavar="OUT", help="output directory")
    parser.add_argument("--hosts", metavar="FILE", help="host name of each node, one per line in node order "
                        "(default node0, node1, ...)")
    parser.add_argument("--apply", action="store_true",
                        help="print the launcher arguments that run the job with the chosen placement")
    parser.add_argument("--json", action="store_true", help="print mapping.json instead of the table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from contend.atomic import check_directory
    from contend.engine import engine, user_errors
    from contend.machine.file import load_machine, located_engine_errors, loggops_params
    from contend.mapping import formats, methods
    from contend.machine.quantities import parse_count

    _check_input(args)
    names = _methods(args.method, methods)
    seed = parse_count(args.seed, "--seed")
    check_directory(args.output, "-o")
    machine = load_machine(args.machine)
    if machine.network is None:
        raise UserError(f"--machine: {machine.name} has no [topology] table: mapping needs a network "
                        "(e.g. bgp-torus, xt3-torus)")
    params = loggops_params(machine)
    params["network"]["placement"] = "block"  # the machine's own list, if any, is for another job
    with located_engine_errors(machine), user_errors("--machine"):
        nodes = int(engine().network_links(params, 1)["num_nodes"])
    per_node = params["network"]["ranks_per_node"]
    hosts = formats.read_hosts(args.hosts, nodes) if args.hosts else formats.default_hosts(nodes)

    with scratch_directory("contend-map-") as scratch:
        graph, schedule, workload = _graph(args, Path(scratch), seed)
        if graph.ranks > nodes * per_node:
            raise UserError(f"{_what(args)}: {graph.ranks:,} ranks do not fit on {machine.name}'s {nodes:,} nodes "
                            f"with {per_node} rank(s) per node (at most {nodes * per_node:,})")
        if len(graph.src) == 0:
            raise UserError(f"{_what(args)}: no two ranks exchange a message: every placement is as good as any")
        given = formats.read_placement(args.placement, graph.ranks, nodes, per_node) if args.placement else None
        results = _score(graph, params, names, given, None if args.no_simulate else schedule, seed)
    best = _best(results, names)
    out = Path(args.output)
    summary = {
        "format": "contend-mapping", "version": 1,
        "workload": workload, "machine": machine.name, "machine_file": machine.path,
        "ranks": graph.ranks, "nodes": nodes, "ranks_per_node": per_node,
        "pairs": int(len(graph.src)), "bytes": graph.total_bytes, "seed": seed,
        "best": best["method"], "hosts": hosts if args.hosts else None,
        "launch": launch_commands(out, graph.ranks),
        "methods": results,
    }
    text = _write(out, summary, best["placement"], hosts, machine)
    if args.json:
        sys.stdout.write(text)
        return 0
    from rich.console import Console

    Console().print(table(summary, out))
    if args.apply:
        print("\n".join(summary["launch"].values()))
    return 0


def _score(graph, params, names: list[str], given, schedule, seed: int) -> list[dict]:
    """Each method's placement (the --placement file's first, when given) with its objective."""
    from contend.mapping import methods
    from contend.mapping.objective import evaluate
    from contend.report.progress import simulation_progress

    todo = ([FROM_FILE] if given is not None else []) + names
    results = []
    with simulation_progress("mapping", unit="steps") as progress:  # a step: a placement, then its score
        for name in todo:
            start = time.perf_counter()
            placement = given if name == FROM_FILE else methods.place(graph, params, name, seed=seed)
            seconds = time.perf_counter() - start
            progress(2 * len(results) + 1, 2 * len(todo))
            objective = evaluate(graph, params, placement, schedule=None if schedule is None else str(schedule))
            results.append(_result(name, placement, objective, seconds))
            progress(2 * len(results), 2 * len(todo))
    return results


def _write(out: Path, summary: dict, placement: list[int], hosts: list[str], machine) -> str:
    """OUT's files, all or none; returns mapping.json's text."""
    import numpy as np

    from contend.atomic import atomic_directory
    from contend.mapping import formats

    chosen = np.asarray(placement, dtype=np.int64)
    files = {
        PLACEMENT: formats.placement_toml(chosen),
        MACHINEFILE: formats.machinefile(chosen, hosts),
        RANKFILE: formats.rankfile(chosen, hosts),
        SLURM_HOSTS: formats.slurm_hostfile(chosen, hosts),
    }
    copy = formats.machine_with_placement(machine, chosen)
    if copy is not None:
        files[MACHINE] = copy
    summary["files"] = sorted([SUMMARY, *files])
    text = json.dumps(summary, indent=1) + "\n"
    with atomic_directory(out, "-o") as directory:
        for name, content in {**files, SUMMARY: text}.items():
            formats.write_text(directory / name, content)
    return text


def _check_input(args: argparse.Namespace) -> None:
    if (args.input is None) == (args.collective is None):
        raise UserError("map: give an input (APP.goal, records.parquet, TRACE_DIR) or --collective NAME --ranks P "
                        "--bytes S, not both or neither")
    if args.input is not None:
        if not Path(args.input).exists():
            raise UserError(f"{args.input}: no such file or directory")
        for option in ("ranks", "bytes"):
            if getattr(args, option) is not None:
                raise UserError(f"map: --{option} applies to --collective, not to an input file")


def _methods(text: str, methods) -> list[str]:
    """The methods --method names, in its order; ``all``: every method that can run here."""
    if text.strip() == "all":
        return [m for m in methods.METHODS if m != "scotch" or methods.scotch_available()]
    from contend.machine.tomlfile import did_you_mean

    names = [word.strip() for word in text.split(",")]
    for name in names:
        if name not in methods.METHODS:
            raise UserError(f"--method: unknown method {name!r}{did_you_mean(name, methods.METHODS)}; known: "
                            f"{', '.join(methods.METHODS)}, all")
    if "scotch" in names and not methods.scotch_available():
        raise UserError("--method: scotch is not installed here (Debian package scotch: scotch_gmap)")
    return list(dict.fromkeys(names))


def _what(args: argparse.Namespace) -> str:
    return args.input if args.input is not None else f"--collective {args.collective}"


def _graph(args: argparse.Namespace, scratch: Path, seed: int):
    """The communication graph, the GOAL schedule to simulate (None for records) and the workload's
    description. A collective or a trace becomes a GOAL file in ``scratch`` first (rather than through
    CommGraph.from_collective or from_trace), since the schedule is simulated under each placement too."""
    from contend.mapping.graph import CommGraph

    if args.collective is not None:
        from contend.engine import engine, user_errors
        from contend.simulation.simulate import collective_arguments

        name, ranks, size, root, seed = collective_arguments(args.collective, args.ranks, args.bytes, args.root, seed)
        schedule = scratch / "collective.goal"
        with user_errors():
            engine().write_goal(name, ranks, size, str(schedule), root=root, seed=seed)
        workload = {"collective": name, "ranks": ranks, "bytes": size, "root": root, "seed": seed}
        return CommGraph.from_goal(schedule), schedule, workload
    path = args.input
    if path.endswith((".goal", ".goal.gz")):
        return CommGraph.from_goal(path), path, {"schedule": path}
    if path.endswith(".parquet"):
        return CommGraph.from_records(path), None, {"records": path}
    from contend.native.trace.replay import convert_input

    schedule = scratch / "trace.goal"
    _, warnings = convert_input(path, str(schedule))
    for warning in warnings:
        print(f"contend: warning: {warning}", file=sys.stderr)
    return CommGraph.from_goal(schedule), schedule, {"trace": path}


def _result(name: str, placement, objective, seconds: float) -> dict:
    from dataclasses import asdict

    scores = {key: (None if value is None else value.item() if hasattr(value, "item") else value)
              for key, value in asdict(objective).items()}
    return {"method": name, "objective": scores, "seconds": round(seconds, 6),
            "placement": [int(n) for n in placement]}


def _best(results: list[dict], names: list[str]) -> dict:
    """The method --method names when it names one; else the lowest hop-bytes, ties by the busiest link."""
    if len(names) == 1:
        return next(r for r in results if r["method"] == names[0])
    return min(results, key=lambda r: (r["objective"]["hop_bytes"], r["objective"]["max_link_load"]))


def launch_commands(out: Path, ranks: int) -> dict[str, str]:
    """How each launcher runs PROGRAM with the placement in ``out``."""
    def at(name):
        return shlex.quote(str(out / name))

    return {
        "mpich": f"mpiexec -f {at(MACHINEFILE)} -n {ranks} PROGRAM",
        "openmpi": f"mpirun --rankfile {at(RANKFILE)} -n {ranks} PROGRAM",
        "slurm": f"SLURM_HOSTFILE={at(SLURM_HOSTS)} srun --distribution=arbitrary -n {ranks} PROGRAM",
    }


def table(summary: dict, out: Path):
    """One row per method: the objective of its placement; the chosen one marked."""
    from contend.report.tables import format_time, rows_table

    rows = []
    for result in summary["methods"]:
        score = result["objective"]
        makespan = score.get("makespan_ns")
        rows.append([
            result["method"] + (" *" if result["method"] == summary["best"] else ""),
            _short(score["hop_bytes"]), f"{score['hops_per_byte']:.3f}", _short(score["max_link_load"]),
            _short(score["mean_link_load"]),
            "-" if makespan is None else format_time(makespan).split(" (")[-1].rstrip(")"),
            f"{result['seconds']:.2f}",
        ])
    from contend.report.tables import describe_workload

    from rich.markup import escape

    title = escape(f"mapping {describe_workload(summary['workload'])} on {summary['machine']}")
    result = rows_table(title, ["method", "hop-bytes", "hops/B", "max link", "mean link", "makespan", "place s"],
                        rows)
    for column in result.columns[1:]:
        column.justify = "right"
    chosen = ("* written to {out}: lowest hop-bytes, ties by the busiest link" if len(summary["methods"]) > 1
              else "written to {out}")
    result.caption = escape(f"link loads in bytes; place s: seconds to compute the placement; {chosen.format(out=out)}")
    return result


def _short(value: float) -> str:
    """A large count in 4 significant digits with an SI prefix: 12.35 M."""
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {prefix}"
    return f"{value:.4g}"
