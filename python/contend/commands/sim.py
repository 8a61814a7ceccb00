"""``contend sim``: simulate a GOAL schedule or a generated collective and report the result."""

from __future__ import annotations

import argparse
import json
import sys

from contend.atomic import check_writable
from contend.commands.options import (add_collective_options, add_noise_options, add_parameter_options,
                                      noise_overrides, parameter_overrides)
from contend.errors import UserError
from contend.machine.file import DEFAULT_MACHINE, load_machine
from contend.noise.settings import resolve
from contend.report.heatmap import METRICS

# A deadlocked schedule is a result, not an input error: distinct from exit code 2.
EXIT_DEADLOCK = 3


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sim",
        help="simulate a GOAL schedule or a generated collective",
        description="Simulate a GOAL schedule (FILE.goal or FILE.goal.gz) or a generated collective in "
        "the LogGOPS model. Times are reported in the schedule's unit, ns. Exit code 2 for bad input, "
        "3 when the schedule deadlocks.",
    )
    parser.add_argument("schedule", nargs="?", metavar="FILE.goal", help="GOAL schedule to simulate")
    add_collective_options(parser, required=False)
    add_parameter_options(parser)
    parser.add_argument("--sharing", choices=("flow", "packet"),
                        help="link sharing model, replacing the machine's: flow (fluid max-min rates, exact, "
                        "slow with many messages in flight) or packet (round robin per link, cost per packet)")
    add_noise_options(parser)
    parser.add_argument("--cpu-scale", metavar="X",
                        help="multiply every calc's duration by X (0.5: a CPU twice as fast; overheads o, O "
                        "stay the machine's)")
    parser.add_argument("--no-cache", action="store_true",
                        help="parse a large GOAL file even if a cached parse of it is valid, and cache "
                        "nothing (the cache: $CONTEND_CACHE/goal, default ~/.cache/contend/goal)")
    parser.add_argument("--threads", metavar="N",
                        help="threads that share a windowed run (default: the machine's cores, on runs large "
                        "enough to gain; results are the same for any number)")
    node = parser.add_argument_group("NIC congestion and admission control",
                                     "The machine's [nic] curves apply; these replace its [throttle].")
    node.add_argument("--throttle", metavar="SPEC",
                      help="token:TOKENS[:SIZE_PER_TOKEN], rate:GAP, proxy:SERVERS[:TOKENS], adaptive[:TOKENS] or none")
    node.add_argument("--ranks-per-node", metavar="N", help="ranks sharing a node (its NIC, token pool and cores)")
    node.add_argument("--cores", metavar="C[:SWITCH[:QUANTUM]]",
                      help="cores the ranks of a node share (e.g. 2), what a core passing from one rank to "
                      "another costs (2:3.8us) and the scheduler tick a rank spinning in a collective keeps "
                      "its core until (2:3.8us:4ms); none: a core per rank. Replaces the machine's [cores]")
    memory = parser.add_argument_group("memory contention (NiMC)",
                                       "The machine's [memory] table applies; these apply its mitigations.")
    memory.add_argument("--memory-throttle", metavar="BW",
                        help="cap on each node's incoming write rate (e.g. 1GB/s), or none")
    memory.add_argument("--reserve-core", action="store_true", default=None,
                        help="reserve a core per node for communication (onload work moves there)")
    memory.add_argument("--no-memory", action="store_true", help="ignore the machine's [memory] table")
    outputs = parser.add_argument_group("outputs")
    outputs.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    outputs.add_argument("--critical-path", action="store_true",
                         help="split the makespan along the critical path: computation, overhead, wire, "
                         "late partner, contention, noise (in the table, the JSON and the records)")
    outputs.add_argument("--records", metavar="FILE.parquet", help="write per-message records (Parquet)")
    outputs.add_argument("--timeline", metavar="FILE.json",
                         help="write a Chrome trace (open it in ui.perfetto.dev)")
    outputs.add_argument("--links", metavar="FILE.parquet",
                         help="write per-link statistics (Parquet; needs a machine with a [topology])")
    outputs.add_argument("--heatmap", metavar="FILE.png",
                         help="draw the link load (PNG; needs a machine with a [topology])")
    outputs.add_argument("--heatmap-metric", choices=sorted(METRICS), default="bytes",
                         help="what the heatmap colours: bytes carried or busy time / makespan (default bytes)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.schedule is None and args.collective is None:
        raise UserError("sim: give a GOAL file or --collective NAME --ranks P --bytes S")
    if args.schedule is not None and args.collective is not None:
        raise UserError("sim: give a GOAL file or --collective, not both")
    if args.schedule is not None:
        for option in ("ranks", "bytes"):
            if getattr(args, option) is not None:
                raise UserError(f"sim: --{option} applies to --collective, not to a GOAL file")
    link_outputs = {"--links": args.links, "--heatmap": args.heatmap}
    for option, path in {"--records": args.records, "--timeline": args.timeline, **link_outputs}.items():
        if path is not None:
            check_writable(path, option)
    machine = load_machine(args.machine or DEFAULT_MACHINE)
    for option, path in link_outputs.items():
        if path is not None and machine.network is None:
            raise UserError(f"{option}: the machine has no network; give --machine with a [topology] table "
                            "(e.g. bgp-torus)")
    noise = resolve(args.noise, machine.noise, **noise_overrides(args))

    workload = (
        {"schedule": args.schedule}
        if args.schedule is not None
        else {"collective": args.collective, "ranks": args.ranks, "bytes": args.bytes,
              "root": args.root, "seed": args.seed}
    )
    from contend.report.progress import simulation_progress
    from contend.simulation.simulate import simulate

    with simulation_progress() as progress:
        result = simulate(
            **workload,
            machine=machine,
            **parameter_overrides(args),
            sharing=args.sharing,
            noise=noise if noise is not None else False,
            throttle=args.throttle,
            ranks_per_node=args.ranks_per_node,
            cores=args.cores,
            memory="none" if args.no_memory else None,
            memory_throttle=args.memory_throttle,
            reserve_core=args.reserve_core,
            records=args.records is not None or args.timeline is not None,  # flows in the trace need records
            timeline=args.timeline is not None,
            progress=progress,
            threads=args.threads,
            cpu_scale=args.cpu_scale,
            critical_path=args.critical_path,
            cache=not args.no_cache,
        )
    write_outputs(result, args.records, args.timeline)
    write_link_outputs(result, args.links, args.heatmap, args.heatmap_metric)

    outputs = {"records": args.records, "timeline": args.timeline, "links": args.links, "heatmap": args.heatmap}
    if args.json:
        summary = result.to_dict()
        summary["outputs"] = outputs
        sys.stdout.write(json.dumps(summary) + "\n")  # dumps uses the C encoder; dump would not
    else:
        from rich.console import Console

        from contend.report.tables import result_table

        tables = [result_table(result, outputs=outputs)]
        if result.critical_path is not None:
            tables.append(result.critical_path.table())
        Console().print(*tables)
    if result.deadlock is not None:
        print(f"contend: deadlock: {result.deadlock.count} operation(s) blocked on ranks "
              f"{', '.join(map(str, result.deadlock.ranks()))}", file=sys.stderr)
        for line in result.deadlock.describe():
            print(f"  {line}", file=sys.stderr)
        return EXIT_DEADLOCK
    return 0


def write_outputs(result, records_path: str | None, timeline_path: str | None) -> None:
    """Write the Parquet records and the Chrome trace, each atomically."""
    metadata = {"params": result.params, "workload": dict(result.workload)}
    if result.critical_path is not None:
        metadata["critical_path"] = result.critical_path.to_dict()
    if records_path is not None:
        from contend.simulation.records import write_records_parquet

        write_records_parquet(result.record_columns, records_path, metadata)
    if timeline_path is not None:
        from contend.simulation.chrome_trace import write_chrome_trace

        write_chrome_trace(result.timeline_columns, result.record_columns, timeline_path, metadata)


def write_link_outputs(result, links_path: str | None, heatmap_path: str | None,
                       metric: str) -> None:
    """Write the per-link statistics (Parquet) and the link-load heatmap (PNG), each atomically."""
    if links_path is not None:
        from contend.simulation.links import write_links_parquet

        write_links_parquet(result.links, links_path, {"params": result.params,
                                                       "workload": dict(result.workload),
                                                       "makespan_ns": result.makespan})
    if heatmap_path is not None:
        from contend.report.heatmap import link_heatmap
        from contend.report.tables import describe_workload

        link_heatmap(heatmap_path, result.links, result.network, metric=metric,
                     title=describe_workload(dict(result.workload)))
