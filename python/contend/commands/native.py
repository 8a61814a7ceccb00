"""``contend native``: build the C tools in native/ with the MPI that is found, and say which MPI that is."""

from __future__ import annotations

import argparse
import subprocess

from contend.native import mpi


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "native", help="build and inspect the native MPI tools",
        description="Build native/ with the MPI found: $CONTEND_MPICC, else the pip mpich in this "
                    "environment, else mpicc on PATH.")
    actions = parser.add_subparsers(dest="native_command", metavar="ACTION")
    actions.required = True
    build = actions.add_parser("build", help="compile native/ (incrementally)")
    build.add_argument("--force", action="store_true", help="rebuild from scratch")
    build.set_defaults(func=run_build)
    info = actions.add_parser("info", help="show the MPI that would be used")
    info.set_defaults(func=run_info)


def run_build(args: argparse.Namespace) -> int:
    library = mpi.find_mpi()
    binary = mpi.build_native(library, force=args.force)
    print(f"built {binary}, {mpi.throttle_library(library).name} and {mpi.trace_library(library).name} with "
          f"{library.mpicc} ({library.flavor}, "
          f"from {library.origin})")
    return 0


def run_info(args: argparse.Namespace) -> int:
    library = mpi.find_mpi()
    print(f"mpicc:   {library.mpicc} (from {library.origin})")
    print(f"mpiexec: {library.mpiexec}")
    print(f"flavor:  {library.flavor}")
    binary = mpi.bench_binary(library)
    print(f"bench:   {binary}{'' if binary.exists() else ' (not built: contend native build)'}")
    if binary.exists():
        patterns = subprocess.run([str(binary), "--list"], capture_output=True, text=True).stdout
        print(f"patterns: {len(patterns.splitlines())}")
    throttle = mpi.throttle_library(library)
    print(f"throttle: {throttle}{'' if throttle.exists() else ' (not built: contend native build)'}")
    running = mpi.running_benchmarks()
    if running:
        print(f"running: contend-bench pids {' '.join(map(str, running))}")
    return 0
