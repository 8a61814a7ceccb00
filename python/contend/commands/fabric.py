"""``contend fabric``: bring an emulated cluster (network namespaces, shaped veth links) up and down."""

from __future__ import annotations

import argparse

from contend.commands.options import add_fabric_prefix
from contend.errors import UserError
from contend.native import fabric
from contend.machine.quantities import parse_count


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "fabric", help="emulated multi-node fabric on this host (needs root)",
        description="Nodes are network namespaces cabled by veth pairs shaped with tbf; "
                    "`contend bench run --fabric` places ranks in them.")
    actions = parser.add_subparsers(dest="fabric_command", metavar="ACTION")
    actions.required = True
    up = actions.add_parser("up", help="build the fabric")
    up.add_argument("--nodes", required=True, metavar="N", help="number of nodes (2..64)")
    up.add_argument("--ppn", default="1", metavar="K", help="ranks per node (default 1)")
    up.add_argument("--link", default="1gbit", metavar="RATE", help="link rate, tc syntax (default 1gbit)")
    up.add_argument("--topology", default="star", metavar="|".join(fabric.TOPOLOGIES),
                    help="star: one switch; line/ring: a router per node (default star)")
    up.add_argument("--queue", default=fabric.TBF_LATENCY, metavar="TIME",
                    help=f"longest wait in a link's queue, tbf latency (default {fabric.TBF_LATENCY}); "
                         "a link holds rate x TIME + 128 KiB and drops beyond")
    add_fabric_prefix(up)
    up.set_defaults(func=run_up)
    down = actions.add_parser("down", help="remove the fabric and everything in it")
    add_fabric_prefix(down)
    down.set_defaults(func=run_down)
    status = actions.add_parser("status", help="show the fabric that is up")
    add_fabric_prefix(status)
    status.set_defaults(func=run_status)
    calibrate = actions.add_parser(
        "calibrate", help="measure the fabric that is up into a machine file (for sim, predict --fabric)",
        description="Between nodes 0 and 1: one long flow (the links' rate), 1-byte round trips (o, g) and "
                    "ping-pongs within tbf's burst (the rate a burst passes at), each repeated; writes a "
                    "machine file whose [topology] is the fabric's, its links token buckets (docs/models.md, "
                    "\"Links\"). With --machine (this host's, from `contend bench fit`), its [cores] and [mpi] too: "
                    "the nodes are namespaces of this host and share its cores and its MPI library.")
    calibrate.add_argument("-o", "--output", metavar="FILE.toml", default="fabric.toml",
                           help="the machine file (default fabric.toml)")
    calibrate.add_argument("--machine", metavar="FILE", help="this host's machine file, whose [cores] and [mpi] to take")
    calibrate.add_argument("--repeats", default="3", metavar="N", help="runs of each measurement (default 3)")
    add_fabric_prefix(calibrate)
    calibrate.set_defaults(func=run_calibrate)


def run_up(args: argparse.Namespace) -> int:
    nodes = parse_count(args.nodes, "--nodes", minimum=2, maximum=fabric.MAX_NODES)
    ppn = parse_count(args.ppn, "--ppn", minimum=1, maximum=fabric.MAX_PPN)
    built = fabric.up(nodes, ppn, args.link, args.topology, args.fabric_prefix, args.queue)
    hosts = ", ".join(built.host_name(i) for i in range(min(nodes, 4))) + (", ..." if nodes > 4 else "")
    print(f"fabric up: {nodes} nodes ({hosts}) x {ppn} ranks, {built.topology}, links {built.link}, "
          f"queue {built.queue} ({built.queue_bytes // 1024} KiB)")
    return 0


def run_down(args: argparse.Namespace) -> int:
    removed = fabric.down(args.fabric_prefix)
    print(f"fabric down: removed {len(removed)} namespaces" if removed else "fabric down: nothing was up")
    return 0


def run_status(args: argparse.Namespace) -> int:
    current = fabric.current(args.fabric_prefix)
    if current is None:
        leftovers = fabric.our_namespaces(args.fabric_prefix)
        if leftovers:
            raise UserError(f"no fabric state but namespaces {', '.join(leftovers)} exist: run `contend fabric down`")
        print("no fabric is up")
        return 0
    print(f"fabric up: {current.nodes} nodes x {current.ppn} ranks, {current.topology}, links {current.link}; "
          f"namespaces {', '.join(fabric.our_namespaces(current.prefix))}")
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    from contend.atomic import atomic_path, check_writable
    from contend.experiments.fabric_check import calibrated_machine
    from contend.experiments.fabric_machine import host_tables

    target = check_writable(args.output, "-o")
    repeats = parse_count(args.repeats, "--repeats", minimum=1, maximum=100)
    host = None if args.machine is None else host_tables(args.machine)
    if args.machine is not None and host is None:
        raise UserError(f"{args.machine}: has no [cores] table to take (contend bench fit writes one)")
    built = fabric.require(args.fabric_prefix, "contend fabric calibrate")
    if built.ppn != 1:
        raise UserError(f"contend fabric calibrate: the fabric has {built.ppn} ranks per node; calibrate one with "
                        f"--ppn 1 (the runs must cross a link), then set ranks_per_node in the file")
    cal, text = calibrated_machine(built, repeats, "contend fabric calibrate", host,
                                   lambda step: print(f"calibrating: {step}", flush=True))
    with atomic_path(target) as temporary:
        temporary.write_text(text)
    print(f"wrote {target}: links {cal.link_Bps * 8 / 1e9:.3f} Gbit/s, bursts of {fabric.TBF_BURST_BYTES // 1024} KiB "
          f"at {cal.peak_Bps * 8 / 1e9:.3f} Gbit/s, o {cal.o / 1000:.2f} us, g {cal.gap / 1000:.2f} us"
          + (f", the cores{' and MPI costs' if host and host.mpi else ''} of {args.machine}" if host else ""))
    return 0
