"""The ``contend`` command: one sub-command per verb, each defined in ``contend.commands``.

Every command module exposes ``register(subparsers)``, which adds its parser and sets ``func``.
User errors (``contend.errors.UserError``), command-line errors and a standard output closed early
become one printable line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
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
    "contend.commands.whatif",
    "contend.commands.diagnose",
    "contend.commands.nimc",
    "contend.commands.trace",
    "contend.commands.throttle",
    "contend.commands.predict",
    "contend.commands.map",
)


class _Parser(argparse.ArgumentParser):
    """Command-line errors are user errors: one line (the usage is one ``--help`` away), not usage + error.
    Sub-command parsers are made with the class of their parent, so this covers every verb and action."""

    def error(self, message: str):
        command = self.prog.removeprefix("contend").strip()
        raise UserError(f"{command}: {message}" if command else message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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
    try:
        args = build_parser().parse_args(argv)
        code = args.func(args)
        sys.stdout.flush()  # here, not at exit, so that a closed stdout is reported like any other error
    except UserError as exc:
        print(f"contend: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except (BrokenPipeError, SystemExit) as exc:
        # rich turns a broken pipe into SystemExit(1) raised while handling it
        if isinstance(exc, SystemExit) and not isinstance(exc.__context__, BrokenPipeError):
            raise
        return _stdout_failed("closed before all of it was written")  # its reader went away (`| head`)
    except OSError as exc:
        # files are written through contend.atomic, which names them; a full disk without a name is stdout's
        if exc.filename is not None or exc.errno not in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
            raise
        return _stdout_failed(f"cannot write ({os.strerror(exc.errno)})")
    except KeyboardInterrupt:
        print("contend: interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


def _stdout_failed(problem: str) -> int:
    # what is still buffered goes nowhere: the interpreter's own flush at exit must not fail again
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    print(f"contend: error: standard output: {problem}", file=sys.stderr)
    return 2


def printable(text: str) -> str:
    """``text`` as one printable line: control and other unprintable characters (ESC, NUL, CR, newline,
    undecodable bytes of a file name) written as Python escapes, e.g. ``\\x1b``."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for c in text)


if __name__ == "__main__":
    sys.exit(main())
