"""Run one benchmark: build the harness if needed, launch it under mpiexec, collect a RunResult.

Launch is on this host's shared memory by default, or on an emulated fabric that is up
(``fabric``), with K ranks in each node namespace. A run never outlives ``timeout_s``.
"""

from __future__ import annotations

import json
import shutil
from contend.atomic import scratch_directory
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from contend.native import fabric as fabric_module
from contend.native import mpi
from contend.native import libthrottle
from contend.native.bench.registry import PATTERN_OPTIONS, benchmark
from contend.native.bench.results import RunResult, parse_lines
from contend.errors import UserError

ProgressCallback = Callable[[int, int], None]


def harness_arguments(
    name: str,
    sizes: Sequence[int] | None,
    iters: int | None,
    warmup: int | None,
    options: Mapping[str, Any],
) -> list[str]:
    """The contend-bench command line after the program name.

    >>> harness_arguments("pairs", [8, 1024], 100, None, {"mode": "random"})
    ['pairs', '--sizes', '8,1024', '--iters', '100', '--mode', 'random']
    """
    bench = benchmark(name)
    args = [name]
    if sizes is not None:
        args += ["--sizes", ",".join(str(s) for s in sizes)]
    if iters is not None:
        if iters < 1:
            raise UserError(f"--iters must be at least 1, got {iters}")
        args += ["--iters", str(iters)]
    if warmup is not None:
        if warmup < 0:
            raise UserError(f"--warmup must not be negative, got {warmup}")
        args += ["--warmup", str(warmup)]
    for key, value in options.items():
        if value is None:
            continue
        if key not in bench.options:
            flag = PATTERN_OPTIONS.get(key, key).lstrip("-")
            raise UserError(f"option --{flag} does not apply to {name}")
        if key == "mode":
            bench.check_mode(str(value))
        args += [PATTERN_OPTIONS[key], str(value)]
    return args


def _failure(name: str, finished: mpi.Finished) -> UserError:
    said = [line for line in finished.stderr.splitlines() if "error:" in line]
    detail = said[0].split("error:", 1)[1].strip() if said else " | ".join(finished.stderr.strip().splitlines()[-3:])
    return UserError(f"{name} failed (exit {finished.returncode}): {detail or 'no message'}")


def run_benchmark(
    name: str,
    *,
    ranks: int | None = None,
    sizes: Sequence[int] | None = None,
    iters: int | None = None,
    warmup: int | None = None,
    options: Mapping[str, Any] | None = None,
    fabric: fabric_module.Fabric | None = None,
    timeout_s: float = 600,
    progress: ProgressCallback | None = None,
    throttle: Mapping[str, str] | None = None,
    cpus: str | None = None,
    round_times: bool = False,
) -> RunResult:
    """Run benchmark ``name`` and return its results (a UserError on bad input or a failed run).

    ``fabric``: the emulated fabric to run on (``fabric.session``, ``fabric.require``), else this host.
    ``throttle``: CONTEND_THROTTLE_* variables (``contend.native.libthrottle.settings``); the ranks then run under
    libcontend-throttle.so with them, and the meta line records them. ``cpus``: the CPU list every rank
    is pinned to (``taskset -c``), e.g. ``"0"`` for ranks that share one core. ``round_times``: nicrate
    and outstanding write when each injecting rank started and ended each round (``RunResult.rounds``)."""
    bench = benchmark(name)
    program_args = harness_arguments(
        name, sizes if sizes is not None else bench.default_sizes, iters, warmup, options or {}
    )
    if round_times:
        if name not in ("nicrate", "outstanding"):  # the node streams (native/bench/nicstream.c)
            raise UserError(f"{name} has no rounds to time (nicrate and outstanding have)")
        program_args += ["--round-times", "1"]
    library = mpi.find_mpi()
    extra_meta: dict[str, Any] = {"mpi_flavor": library.flavor, "mpicc": str(library.mpicc)}
    placement = None
    if fabric is not None:
        capacity = fabric.nodes * fabric.ppn
        ranks = capacity if ranks is None else ranks
        if ranks > capacity:
            raise UserError(f"--np {ranks}: the fabric has {fabric.nodes} nodes x {fabric.ppn} ranks = {capacity}")
        extra_meta["fabric"] = fabric.describe()
    ranks = bench.default_ranks if ranks is None else ranks
    bench.check_ranks(ranks)
    binary = mpi.build_native(library)
    program = [str(binary)] + program_args
    if throttle is not None:
        program = libthrottle.preload(program, mpi.throttle_library(library), throttle)
        extra_meta["throttle"] = dict(throttle)
    if cpus is not None:
        if shutil.which("taskset") is None:
            raise UserError("pinning ranks needs `taskset` (Debian: util-linux)")
        program = ["taskset", "-c", cpus, *program]
        extra_meta["cpus"] = cpus

    def on_line(line: str) -> None:
        if progress is not None and line.startswith('{"type":"progress"'):
            step = json.loads(line)
            progress(step["done"], step["total"])

    with scratch_directory("contend-run-") as scratch:
        if fabric is not None:
            placement = mpi.Placement(fabric_module.write_rank_wrapper(fabric, Path(scratch)))
        argv, launch_env = mpi.launch_command(library, ranks, program, placement)
        finished = mpi.run_streaming(argv, launch_env, on_line, timeout_s)
    if finished.timed_out:
        raise UserError(f"{name} did not finish within {timeout_s:g} s and was stopped")
    if finished.returncode != 0:
        raise _failure(name, finished)
    extra_meta["launch"] = argv[: len(argv) - len(program)]
    run = parse_lines(finished.lines, extra_meta)
    if not run.complete:
        raise UserError(f"{name} ended without its closing line: {finished.stderr.strip()[-200:]}")
    return run
