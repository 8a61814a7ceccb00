"""``contend goal``: write generated collectives as GOAL text, and check GOAL files."""

from __future__ import annotations

import argparse
import json
import sys

from contend.atomic import atomic_path, check_writable
from contend.commands.options import add_collective_options
from contend.engine import engine, user_errors

SUMMARY_KEYS = ("num_ranks", "ops", "sends", "recvs", "calcs", "cpus", "nics")


def register(subparsers) -> None:
    parser = subparsers.add_parser("goal", help="write and check GOAL schedules",
                                   description="Write generated collectives as GOAL text; check GOAL files.")
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


def run_write(args: argparse.Namespace) -> int:
    target = check_writable(args.output, "-o")
    from contend.simulate import collective_arguments

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
