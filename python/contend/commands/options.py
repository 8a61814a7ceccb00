"""Command-line options shared by the commands (``contend sim`` and ``contend goal``; bounded numbers).

Numbers are taken as strings and checked by contend itself, so a bad value is one UserError line
(exit 2) rather than argparse's usage dump.
"""

from __future__ import annotations

import argparse

from contend.machine.quantities import bounded_number


def add_fabric_prefix(parser: argparse.ArgumentParser) -> None:
    """--fabric-prefix: which emulated fabric (the names of its namespaces; contend's tests use their own)."""
    from contend.native.fabric import DEFAULT_PREFIX

    parser.add_argument("--fabric-prefix", metavar="PREFIX", default=DEFAULT_PREFIX,
                        help=f"the emulated fabric whose namespaces start with PREFIX (default {DEFAULT_PREFIX})")


def add_collective_options(parser: argparse.ArgumentParser, required: bool) -> None:
    """--collective NAME --ranks P --bytes S [--root R] [--seed N]."""
    group = parser.add_argument_group("generated collective")
    group.add_argument("--collective", metavar="NAME", required=required,
                       help="pattern to generate, e.g. binomial-bcast, dissemination, allreduce-ring, incast")
    group.add_argument("--ranks", metavar="P", required=required, help="number of ranks (e.g. 1024 or 2^20)")
    group.add_argument("--bytes", metavar="S", required=required, help="message size (e.g. 8, 64KiB, 1MB)")
    group.add_argument("--root", metavar="R", default="0", help="root rank of rooted collectives (default 0)")
    group.add_argument("--seed", metavar="N", default="0", help="seed of random patterns (default 0)")


def add_parameter_options(parser: argparse.ArgumentParser) -> None:
    """--machine and the LogGOPS parameters; explicit values override the machine file."""
    group = parser.add_argument_group(
        "LogGOPS parameters",
        "Defaults are LogGOPSim's (L=2500 o=1500 g=1000 G=6 O=0 S=65535; ns, ns/byte, bytes). "
        "Times take units (3us, 1500ns, 800ps); bare numbers are ns.",
    )
    group.add_argument("--machine", metavar="NAME|FILE.toml",
                       help="machine preset or file providing the parameters (see docs/formats.md)")
    group.add_argument("-L", metavar="TIME", help="latency")
    group.add_argument("-o", metavar="TIME", help="CPU overhead per message")
    group.add_argument("-g", metavar="TIME", help="NIC gap per message")
    group.add_argument("-G", metavar="TIME/B", help="NIC gap per byte: 6, 6ns, 80ps or a bandwidth (12.5GB/s)")
    group.add_argument("-O", metavar="TIME/B", help="CPU overhead per byte")
    group.add_argument("-S", metavar="BYTES", help="eager/rendezvous threshold: size <= S is eager")


def add_noise_options(parser: argparse.ArgumentParser) -> None:
    """--noise SPEC and its phase, seed and per-byte switch (docs/models.md, "Noise")."""
    group = parser.add_argument_group(
        "OS noise", "Detours that stretch CPU work (calc and o); replaces the machine's [noise].")
    group.add_argument("--noise", metavar="SPEC",
                       help="periodic:FREQ:DURATION (periodic:1kHz:25us), random:RATE:DURATION[:fixed|:exponential], "
                            "random:RATE:MIN-MAX (uniform lengths), trace:FILE[,FILE...] (from contend noise measure), "
                            "or none")
    group.add_argument("--noise-phase", metavar="PHASE",
                       help="independent (each rank its own seeded phase; default), coscheduled (all at 0) or a time "
                            "(all ranks at that phase)")
    group.add_argument("--noise-seed", metavar="N", help="seed of the independent phases and random detours (default 0)")
    group.add_argument("--noise-per-byte", action="store_const", const=True, default=None,
                       help="stretch the per-byte CPU cost O too")


def noise_overrides(args: argparse.Namespace) -> dict[str, object]:
    """The ``--noise-*`` values for ``contend.noise.settings.resolve``."""
    return {"phase": args.noise_phase, "seed": args.noise_seed, "per_byte": args.noise_per_byte}


def parameter_overrides(args: argparse.Namespace) -> dict[str, str | None]:
    return {key: getattr(args, key) for key in ("L", "o", "g", "G", "O", "S")}


# The longest run `contend trace` and `contend throttle` wait for (--timeout, seconds).
MAX_RUN_S = 7 * 86400


def run_timeout(text: str) -> float:
    """--timeout of a launched MPI run: 1 s .. a week."""
    return bounded_number(text, "--timeout", 1, MAX_RUN_S)


def launch_words(words: list[str]) -> list[str]:
    """The launch command after ``--`` (argparse keeps the ``--`` in a REMAINDER argument)."""
    return words[1:] if words and words[0] == "--" else list(words)
