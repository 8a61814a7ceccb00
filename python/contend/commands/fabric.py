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
