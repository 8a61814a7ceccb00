"""Running a program under the tracer (libcontend-trace.so): its trace directory and the traced launch, shared by
``contend trace`` and ``contend predict``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from contend.native import mpi
from contend.atomic import output_directory
from contend.errors import UserError


def prepare_directory(directory: Path) -> Path:
    """The trace directory, made, and emptied of an earlier trace's files (only ours)."""
    directory = output_directory(directory, "-o").resolve()
    for entry in directory.iterdir():
        if entry.name.startswith("rank-") and (entry.name.endswith(".ctrace") or entry.name.endswith(".tmp")) \
                or entry.name in ("records.parquet", "regions.parquet"):
            entry.unlink()
    return directory


def run_traced(command: list[str], directory: Path, *, records: int, depth: int, clock: str, timeout_s: float) -> None:
    """Run ``command`` with the tracer preloaded, its rank files into ``directory``; the program's output
    streams through. A failed, timed-out or unlaunchable run is one UserError line."""
    library = mpi.trace_library(mpi.find_mpi())
    if not library.is_file():
        raise UserError(f"{library} is not built: run `contend native build`")
    env = dict(os.environ)
    env["LD_PRELOAD"] = f"{library}:{env['LD_PRELOAD']}" if env.get("LD_PRELOAD") else str(library)
    env.update(CONTEND_TRACE_DIR=str(directory), CONTEND_TRACE_RECORDS=str(records),
               CONTEND_TRACE_DEPTH=str(depth), CONTEND_TRACE_CLOCK=clock)
    env[mpi.LAUNCHER_MARK] = str(os.getpid())
    finished = mpi.run_streaming(command, env, lambda line: sys.stdout.write(line), timeout_s)
    if finished.stderr:
        sys.stderr.write(finished.stderr)
    if finished.timed_out:
        raise UserError(f"trace: the traced command ran longer than --timeout {timeout_s:g} s and was ended")
    if finished.returncode != 0:
        raise UserError(f"trace: the traced command exited with code {finished.returncode}; rank files so far "
                        f"are in {directory} (contend trace convert {directory})")
