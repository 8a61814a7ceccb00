"""The ``contend`` command: one sub-command per verb, each defined in ``contend.commands``.

Every command module exposes ``register(subparsers)``, which adds its parser and sets ``func``.
User errors (``contend.errors.UserError``) become one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from contend.errors import UserError

COMMAND_MODULES = (
    "contend.commands.sim",
    "contend.commands.goal",
    "contend.commands.demo",
    "contend.commands.bench",
    "contend.commands.fabric",
    "contend.commands.native",
    "contend.commands.reproduce",
    "contend.commands.noise",
    "contend.commands.tune",
    "contend.commands.diagnose",
    "contend.commands.nimc",
    "contend.commands.trace",
    "contend.commands.throttle",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="contend",
        description="Measure, simulate, diagnose and avoid contention in parallel programs.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # a verb not built yet; the others still work
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except UserError as exc:
        print(f"contend: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("contend: interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
